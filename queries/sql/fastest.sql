-- The k fastest correct candidates of one problem (the macro's problem argument), copies (same candidate_key)
-- folded into their fastest row, ties broken by id; speedup against the median label of the problem's ranked
-- rows. Only rows that pass the candidate filter (`is_candidate`: Triton kernels only, no hack flag, unless
-- `$c_no_triton` / `$c_flagged` let them in) and correct by their latest verdict (`ranked_correct`). The shown
-- row's latest re-run (this store's, see setup_runs.sql) gives its verdict (a CPU interpreter run's said so) and
-- flags; its latest GPU run, which an interpreter run never replaces, its Triton share of GPU time and its speedup
-- vs the eager reference timed in that same run (`ref_median_ms`, `run_id`: rows re-run in different runs had
-- different reference timings). With $fold_near, near-copies (one near_dup_cluster: queries/neardup/) fold like
-- copies (`fold_key`).
-- Hash aggregates and joins only (no window sort over the problem's rows).
WITH rows AS (
    SELECT id, y, split, n_kernels, kernel_names, autotuned, cand_chars, candidate_key, run_flags, static_flags,
           CASE WHEN $fold_near::BOOLEAN THEN coalesce(near_dup_cluster, candidate_key) ELSE candidate_key END AS fold_key
    FROM filtered($filter)
    WHERE ranked_correct(ok, refuted) AND is_candidate(n_kernels, flagged, $c_no_triton::BOOLEAN, $c_flagged::BOOLEAN)
),
folded AS (
    SELECT fold_key, min(y) AS y, max(y) AS y_copies_max, count(*) AS copies
    FROM rows
    GROUP BY fold_key
),
top AS (  -- every candidate as fast as the k-th fastest, so ties at the cut are broken by id below
    SELECT * FROM folded
    WHERE y <= coalesce((SELECT y FROM folded ORDER BY y LIMIT 1 OFFSET greatest($k - 1, 0)), 'infinity'::DOUBLE)
),
best AS (
    SELECT t.fold_key, min(r.id) AS id
    FROM top t
    JOIN rows r ON r.fold_key = t.fold_key AND r.y = t.y
    GROUP BY t.fold_key
)
SELECT
    row_number() OVER (ORDER BY t.y, b.id) AS rank,
    b.id,
    g.speedup AS speedup_vs_reference,
    r.kernel_names,
    CASE WHEN m.status IS NULL THEN NULL WHEN m.status = 'ok' THEN 'correct'
         ELSE 'failed: ' || coalesce(m.error_type, 'unknown') END
        || CASE WHEN m.device = (SELECT cpu_label FROM outcome_labels) THEN ' (CPU interpreter check)' ELSE '' END
        AS verified,
    g.median_ms AS measured_ms,
    g.ref_median_ms,
    g.triton_share,
    g.launches_checked,
    list_distinct(list_concat(coalesce(r.static_flags, []), coalesce(r.run_flags, []))) AS flags,
    r.static_flags IS NULL AS static_not_checked,
    t.y,
    t.copies,
    t.y_copies_max,
    (SELECT median(y) FROM rows) / t.y AS speedup_vs_median,
    r.split,
    r.n_kernels,
    r.autotuned,
    r.cand_chars,
    g.result_id AS run_id,
    r.candidate_key
FROM top t
JOIN best b ON b.fold_key = t.fold_key
JOIN rows r ON r.id = b.id
LEFT JOIN runs_latest m ON m.row_id = b.id
LEFT JOIN runs_latest_gpu g ON g.row_id = b.id
ORDER BY t.y, b.id
LIMIT $k;
