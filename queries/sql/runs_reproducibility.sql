-- Rows timed more than once (re-runs, bulk --repeats): spread of the measured medians across runs of one row,
-- with the GPUs they ran on. cv = standard deviation / mean of the run medians.
SELECT
    r.row_id,
    any_value(p.problem_key) AS problem_key,
    count(*) AS runs,
    min(r.median_ms) AS median_ms_min,
    median(r.median_ms) AS median_ms_median,
    max(r.median_ms) AS median_ms_max,
    stddev_samp(r.median_ms) / nullif(avg(r.median_ms), 0) AS cv,
    string_agg(DISTINCT r.gpu, ', ') AS gpus
FROM runs r
JOIN filtered($filter) p ON p.id = r.row_id
WHERE r.status = 'ok' AND r.median_ms IS NOT NULL
GROUP BY r.row_id
HAVING count(*) >= 2
ORDER BY cv DESC NULLS LAST, r.row_id;
