-- The one filter of every question (see queries/filters.py for the meaning of each argument).
CREATE MACRO filtered(f_split, f_holdout, f_problem, f_status, f_error, f_source) AS TABLE
SELECT * FROM programs
WHERE (f_split IS NULL OR split = f_split)
  AND (f_holdout IS NULL OR holdout_group = f_holdout)
  AND (f_problem IS NULL OR problem_key = f_problem)
  AND (f_status IS NULL OR ok = (f_status = 'ok'))
  AND (CASE
        WHEN f_error IS NULL AND f_source IS NULL THEN true
        WHEN f_error IS NULL AND f_source = 'static' THEN static_error <> 'ok_static'
        WHEN f_error IS NULL THEN measured_status IS NOT NULL
        WHEN f_source = 'static' THEN static_error = f_error
        WHEN f_source = 'measured' THEN measured_error = f_error
        ELSE static_error = f_error OR measured_error = f_error
      END);

-- Per-problem statistics over the filtered rows (the problems table; `problem_stats` holds it unfiltered).
CREATE MACRO problem_table(f_split, f_holdout, f_problem, f_status, f_error, f_source) AS TABLE
SELECT
    problem_key,
    max(problem_id) AS problem_id,
    max(holdout_group) AS holdout_group,
    min(title) AS title,
    max(level) AS level,
    count(*) AS candidates,
    count(DISTINCT candidate_key) AS distinct_candidates,
    count(*) FILTER (WHERE NOT ok) AS failures,
    count(*) FILTER (WHERE NOT ok) / count(*) AS failure_rate,
    min(y) AS y_min,
    quantile_cont(y, 0.1) AS y_p10,
    median(y) AS y_median,
    quantile_cont(y, 0.9) AS y_p90,
    max(y) AS y_max,
    max(y) / nullif(min(y), 0) AS spread,
    arg_min(id, (y, id)) FILTER (WHERE ok) AS best_id,
    count(*) FILTER (WHERE split = 'train') AS train_rows,
    count(*) FILTER (WHERE split = 'test') AS test_rows
FROM filtered(f_split, f_holdout, f_problem, f_status, f_error, f_source)
GROUP BY problem_key;
