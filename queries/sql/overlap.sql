-- Problems whose key appears in both the train and the test split, with the test rows' holdout group.
SELECT
    problem_key,
    max(problem_id) AS problem_id,
    max(holdout_group) FILTER (WHERE split = 'test') AS holdout_group,
    min(title) AS title,
    count(*) FILTER (WHERE split = 'train') AS train_rows,
    count(*) FILTER (WHERE split = 'test') AS test_rows
FROM programs
GROUP BY problem_key
HAVING count(*) FILTER (WHERE split = 'train') > 0 AND count(*) FILTER (WHERE split = 'test') > 0
ORDER BY holdout_group NULLS LAST, problem_id NULLS LAST, problem_key;
