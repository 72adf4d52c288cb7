-- One row of totals over the filtered rows.
SELECT
    count(*) AS rows,
    count(*) FILTER (WHERE ok) AS ok_rows,
    count(*) FILTER (WHERE y IS NOT NULL AND NOT isfinite(y)) AS non_finite_label_rows,
    count(*) FILTER (WHERE NOT ok) AS failed_rows,
    count(*) FILTER (WHERE NOT ok) / nullif(count(*), 0) AS failure_rate,
    count(DISTINCT problem_key) AS problems,
    count(DISTINCT candidate_key) AS distinct_candidates,
    count(*) FILTER (WHERE split = 'train') AS train_rows,
    count(*) FILTER (WHERE split = 'test') AS test_rows,
    count(*) FILTER (WHERE autotuned) AS autotuned_rows,
    count(*) FILTER (WHERE static_error <> 'ok_static') AS static_error_rows,
    count(*) FILTER (WHERE flagged) AS flagged_rows,
    count(*) FILTER (WHERE static_flags IS NULL) AS static_unchecked_rows,
    avg(n_kernels) AS mean_kernels
FROM filtered($filter);
