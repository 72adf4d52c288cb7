-- Rows, failures and failure rate per split and holdout group.
SELECT
    split,
    holdout_group,
    count(*) AS rows,
    count(*) FILTER (WHERE NOT ok) AS failed_rows,
    count(*) FILTER (WHERE NOT ok) / count(*) AS failure_rate,
    count(DISTINCT problem_key) AS problems
FROM filtered($filter)
GROUP BY split, holdout_group
ORDER BY split, holdout_group NULLS FIRST;
