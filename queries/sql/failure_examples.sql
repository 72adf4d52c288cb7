-- Example failed rows (label failed, or latest run failed), with their static, triage and measured error, and the
-- cause they are counted by on the Failures page (failures.sql, setup_causes.sql) with what it rests on.
WITH examples AS (
    SELECT id, problem_key, problem_id, title, split, holdout_group, static_error, triage_error, measured_error,
           n_kernels, n_chars, measured_status, triage_status, triage_basis
    FROM filtered($filter)
    WHERE NOT ok OR measured_status <> 'ok'
    ORDER BY id
    LIMIT $limit
), sourced AS (
    SELECT *, cause_source($filter['source']::VARCHAR, measured_status, triage_status) AS source FROM examples
)
SELECT e.id, e.problem_key, e.problem_id, e.title, e.split, e.holdout_group,
       cause_error(e.source, e.static_error, e.measured_status, e.measured_error, e.triage_status, e.triage_error)
           AS cause,
       cause_basis(e.source, r.gpu, r.device, e.triage_basis) AS basis,
       e.static_error, e.triage_error, e.measured_error, e.n_kernels, e.n_chars,
       r.message AS measured_message, t.message AS triage_message
FROM sourced e
LEFT JOIN runs_latest r ON r.row_id = e.id
LEFT JOIN triage_latest t ON t.row_id = e.id
ORDER BY e.id;
