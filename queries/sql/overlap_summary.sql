-- Per holdout group of the test split: its problems, how many also appear in train, and the rows involved.
WITH per_problem AS (
    SELECT
        problem_key,
        max(holdout_group) FILTER (WHERE split = 'test') AS holdout_group,
        count(*) FILTER (WHERE split = 'train') AS train_rows,
        count(*) FILTER (WHERE split = 'test') AS test_rows
    FROM programs
    GROUP BY problem_key
    HAVING count(*) FILTER (WHERE split = 'test') > 0
)
SELECT
    holdout_group,
    count(*) AS test_problems,
    count(*) FILTER (WHERE train_rows > 0) AS overlapping_problems,
    count(*) FILTER (WHERE train_rows > 0) / count(*) AS overlap_rate,
    sum(test_rows) AS test_rows,
    sum(train_rows) AS train_rows_of_overlapping
FROM per_problem
GROUP BY holdout_group
ORDER BY holdout_group NULLS LAST;
