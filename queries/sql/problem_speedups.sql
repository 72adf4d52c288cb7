-- Per problem over the filtered rows: the best speedup vs reference measured by a GPU re-run (the latest GPU run of
-- each row, correct: a CPU interpreter run never replaces its timing), over the rows the leaderboard ranks (correct
-- by their latest verdict, `ranked_correct`, and passing the candidate filter `is_candidate`); problems without one
-- are left out. The runs change without the index: asked apart from `problem_stats`.
SELECT f.problem_key, max(m.speedup) AS best_speedup
FROM filtered($filter) f
JOIN runs_latest_gpu m ON m.row_id = f.id
WHERE ranked_correct(f.ok, f.refuted) AND is_candidate(f.n_kernels, f.flagged, $c_no_triton::BOOLEAN, $c_flagged::BOOLEAN)
  AND m.status = 'ok' AND m.speedup IS NOT NULL
GROUP BY f.problem_key;
