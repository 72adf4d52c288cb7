-- The one filter of every question (see queries/filters.py for the meaning of each argument).
CREATE MACRO filtered(f_split, f_holdout, f_problem, f_status, f_error, f_source, f_level, f_flag) AS TABLE
SELECT * FROM programs
WHERE (f_split IS NULL OR split = f_split)
  AND (f_holdout IS NULL OR holdout_group = f_holdout)
  AND (f_problem IS NULL OR problem_key = f_problem)
  AND (f_status IS NULL OR ok = (f_status = 'ok'))
  AND (f_level IS NULL OR level = f_level)
  AND (f_flag IS NULL OR coalesce(list_contains(static_flags, f_flag) OR list_contains(run_flags, f_flag), false))
  AND (CASE
        WHEN f_error IS NULL AND f_source IS NULL THEN true
        WHEN f_error IS NULL AND f_source = 'static' THEN static_error <> 'ok_static'
        WHEN f_error IS NULL THEN measured_status IS NOT NULL
        WHEN f_source = 'static' THEN static_error = f_error
        WHEN f_source = 'measured' THEN measured_error = f_error
        ELSE static_error = f_error OR measured_error = f_error
      END);

-- The one candidate filter of every ranking (leaderboard, the problems table's label columns, the page header's
-- fastest, the fastest-correct export): Triton kernels only and no hack flag (static, or the latest run's: the
-- `hack` entries of common/checks.py), unless the toggles let them in (queries/filters.py, `Candidates`).
CREATE MACRO is_candidate(n_kernels, flagged, c_no_triton, c_flagged) AS
    (c_no_triton OR n_kernels > 0) AND (c_flagged OR NOT flagged);

-- The one "correct" of every ranking: labelled correct, and not refuted by the row's latest verdict (a failed GPU
-- re-run, or a CPU interpreter run failed for a reason no device changes: setup_runs.sql).
CREATE MACRO ranked_correct(ok, refuted) AS ok AND NOT refuted;

-- Per-problem statistics over the filtered rows (the problems table; `problem_stats` holds it unfiltered, with
-- the default candidate filter). Label columns (y_*, spread, best_id) count the correct rows (`ranked_correct`)
-- that pass the candidate filter (`ranked`); candidates count every filtered row, failures every one that is not
-- correct.
CREATE MACRO problem_table(f_split, f_holdout, f_problem, f_status, f_error, f_source, f_level, f_flag,
                           c_no_triton, c_flagged) AS TABLE
SELECT
    problem_key,
    max(problem_id) AS problem_id,
    max(holdout_group) AS holdout_group,
    min(title) AS title,
    max(level) AS level,
    count(*) AS candidates,
    count(DISTINCT candidate_key) AS distinct_candidates,
    count(*) FILTER (WHERE NOT ranked_correct(ok, refuted)) AS failures,
    count(*) FILTER (WHERE NOT ranked_correct(ok, refuted)) / count(*) AS failure_rate,
    count(*) FILTER (WHERE ranked) AS ranked,
    count(*) FILTER (WHERE flagged) AS flagged_rows,
    min(y) FILTER (WHERE ranked) AS y_min,
    quantile_cont(y, 0.1) FILTER (WHERE ranked) AS y_p10,
    median(y) FILTER (WHERE ranked) AS y_median,
    quantile_cont(y, 0.9) FILTER (WHERE ranked) AS y_p90,
    max(y) FILTER (WHERE ranked) AS y_max,
    max(y) FILTER (WHERE ranked) / nullif(min(y) FILTER (WHERE ranked), 0) AS spread,
    arg_min(id, (y, id)) FILTER (WHERE ranked) AS best_id,
    count(*) FILTER (WHERE split = 'train') AS train_rows,
    count(*) FILTER (WHERE split = 'test') AS test_rows
FROM (SELECT *, ranked_correct(ok, refuted) AND is_candidate(n_kernels, flagged, c_no_triton, c_flagged) AS ranked
      FROM filtered(f_split, f_holdout, f_problem, f_status, f_error, f_source, f_level, f_flag))
GROUP BY problem_key;
