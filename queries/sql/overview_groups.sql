-- Rows, failures and failure rate per split and holdout group.
SELECT
    split,
    holdout_group,
    count(*) AS rows,
    count(*) FILTER (WHERE NOT ok) AS failed_rows,
    count(*) FILTER (WHERE NOT ok) / count(*) AS failure_rate,
    count(DISTINCT problem_key) AS problems
FROM filtered(
    $f_split::VARCHAR, $f_holdout::VARCHAR, $f_problem::VARCHAR, $f_status::VARCHAR, $f_error::VARCHAR,
    $f_source::VARCHAR,
    $f_level::INTEGER, $f_flag::VARCHAR, $f_triage::VARCHAR, $f_triage_error::VARCHAR)
GROUP BY split, holdout_group
ORDER BY split, holdout_group NULLS FIRST;
