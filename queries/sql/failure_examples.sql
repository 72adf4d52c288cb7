-- Example failed rows (label failed, or latest run failed), with their static and measured error.
WITH examples AS (
    SELECT id, problem_key, problem_id, title, split, holdout_group, static_error, measured_error, n_kernels,
           n_chars
    FROM filtered($filter)
    WHERE NOT ok OR measured_status <> 'ok'
    ORDER BY id
    LIMIT $limit
)
SELECT e.*, r.message AS measured_message
FROM examples e
LEFT JOIN runs_latest r ON r.row_id = e.id
ORDER BY e.id;
