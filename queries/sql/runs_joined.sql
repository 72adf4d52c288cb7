-- Every run result of a filtered row next to its label: measured median vs label y (ratio = measured / label);
-- pair_job: the pair job that timed it back to back with another program (null: a job of its own).
SELECT
    r.row_id, p.problem_key, p.problem_id, p.title, p.split, p.holdout_group,
    p.y, p.ok AS label_ok, r.status, r.error_type, r.message,
    r.median_ms, r.p10_ms, r.p90_ms, r.timing_n, r.median_ms / nullif(p.y, 0) AS ratio,
    r.ref_median_ms, r.speedup, r.flags, r.device, r.gpu, r.finished_at, r.result_id, r.pair_job
FROM runs r
JOIN filtered($filter) p ON p.id = r.row_id
ORDER BY r.recency;
