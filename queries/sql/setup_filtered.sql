-- The one filter of every question, set up once per connection: `filtered($filter)`, where `$filter` is the one
-- bound STRUCT of queries/filters.py (`Filters.params`: split, holdout, problem, status, error, source, level,
-- flag, triage, triage_error; a NULL field does not filter; a NULL struct is no filter). `error` matches a cause as
-- the Failures page names it (setup_causes.sql): an error type, or `ok` / `passed` (a re-run or a triage passed).
CREATE MACRO filtered(f) AS TABLE
SELECT * FROM programs
WHERE f IS NULL OR (
      (f['split'] IS NULL OR split = f['split'])
  AND (f['holdout'] IS NULL OR holdout_group = f['holdout'])
  AND (f['problem'] IS NULL OR problem_key = f['problem'])
  AND (f['status'] IS NULL OR ok = (f['status'] = 'ok'))
  AND (f['level'] IS NULL OR level = f['level'])
  AND (f['flag'] IS NULL OR coalesce(list_contains(static_flags, f['flag']) OR list_contains(run_flags, f['flag']), false))
  AND (f['triage'] IS NULL OR coalesce(triage_status = f['triage'], f['triage'] = 'untriaged' AND triage_status IS NULL))
  AND (f['triage_error'] IS NULL OR triage_error = f['triage_error'])
  AND (CASE
        WHEN f['error'] IS NULL AND f['source'] IS NULL THEN true
        WHEN f['error'] IS NULL AND f['source'] = 'static' THEN static_error <> 'ok_static'
        WHEN f['error'] IS NULL AND f['source'] = 'triaged' THEN triage_status IS NOT NULL
        WHEN f['error'] IS NULL THEN measured_status IS NOT NULL
        WHEN f['source'] = 'static' THEN static_error = f['error']
        WHEN f['source'] = 'measured' THEN coalesce(measured_error, measured_status) = f['error']
        WHEN f['source'] = 'triaged' THEN coalesce(triage_error, triage_status) = f['error']
        ELSE static_error = f['error'] OR coalesce(measured_error, measured_status) = f['error']
             OR coalesce(triage_error, triage_status) = f['error']
      END));

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
CREATE MACRO problem_table(f, c_no_triton, c_flagged) AS TABLE
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
      FROM filtered(f))
GROUP BY problem_key;
