-- Example failed rows (label failed, or latest run failed), with their static and measured error.
WITH examples AS (
    SELECT id, problem_key, problem_id, title, split, holdout_group, static_error, measured_error, n_kernels,
           n_chars
    FROM filtered(
        $f_split::VARCHAR, $f_holdout::VARCHAR, $f_problem::VARCHAR, $f_status::VARCHAR, $f_error::VARCHAR,
    $f_source::VARCHAR,
    $f_level::INTEGER, $f_flag::VARCHAR)
    WHERE NOT ok OR measured_status <> 'ok'
    ORDER BY id
    LIMIT $limit
)
SELECT e.*, r.message AS measured_message
FROM examples e
LEFT JOIN runs_latest r ON r.row_id = e.id
ORDER BY e.id;
