-- Example failed rows (label failed, or latest run failed), with their static and measured error.
SELECT
    p.id, p.problem_key, p.problem_id, p.title, p.split, p.holdout_group, p.static_error,
    r.error_type AS measured_error, r.message AS measured_message, p.n_kernels, p.n_chars
FROM filtered(
    $f_split::VARCHAR, $f_holdout::VARCHAR, $f_problem::VARCHAR, $f_status::VARCHAR, $f_error::VARCHAR,
    $f_source::VARCHAR) p
LEFT JOIN runs_latest r ON r.row_id = p.id
WHERE NOT p.ok OR r.status <> 'ok'
ORDER BY p.id
LIMIT $limit;
