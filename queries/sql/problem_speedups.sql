-- Per problem over the filtered rows: the best speedup vs reference measured by a re-run (the latest run of each
-- row, correct), over the rows the leaderboard ranks (a label, and passing the candidate filter `is_candidate`);
-- problems without one are left out. The runs change without the index: asked apart from `problem_stats`.
SELECT f.problem_key, max(m.speedup) AS best_speedup
FROM filtered(
    $f_split::VARCHAR, $f_holdout::VARCHAR, $f_problem::VARCHAR, $f_status::VARCHAR, $f_error::VARCHAR,
    $f_source::VARCHAR, $f_level::INTEGER, $f_flag::VARCHAR) f
JOIN runs_latest m ON m.row_id = f.id
WHERE f.ok AND is_candidate(f.n_kernels, f.flagged, $c_no_triton::BOOLEAN, $c_flagged::BOOLEAN)
  AND m.status = 'ok' AND m.speedup IS NOT NULL
GROUP BY f.problem_key;
