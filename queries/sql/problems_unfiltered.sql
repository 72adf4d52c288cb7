-- The problems table with no filter, precomputed at connect.
SELECT * FROM problem_stats ORDER BY problem_key;
