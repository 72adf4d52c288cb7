-- The unfiltered problems-table row of one problem (precomputed at connect).
SELECT * FROM problem_stats WHERE problem_key = $problem_key;
