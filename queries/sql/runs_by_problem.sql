-- Per problem, over the latest result of each filtered row: agreement of measured verdicts with labels and
-- the measured / label ratio.
WITH j AS (
    SELECT p.problem_key, p.problem_id, p.title, p.ok AS label_ok, r.status,
           r.median_ms / nullif(p.y, 0) AS ratio
    FROM runs_latest r
    JOIN filtered($filter) p ON p.id = r.row_id
)
SELECT
    problem_key,
    max(problem_id) AS problem_id,
    min(title) AS title,
    count(*) AS rows_run,
    count(*) FILTER (WHERE status = 'ok') AS measured_ok,
    count(*) FILTER (WHERE label_ok) AS label_ok,
    count(*) FILTER (WHERE label_ok AND status <> 'ok') AS label_ok_measured_failed,
    count(*) FILTER (WHERE NOT label_ok AND status = 'ok') AS label_failed_measured_ok,
    count(ratio) AS rows_with_ratio,
    min(ratio) AS ratio_min,
    median(ratio) AS ratio_median,
    max(ratio) AS ratio_max
FROM j
GROUP BY problem_key
ORDER BY rows_run DESC, problem_key;
