-- Agreement with the labels, per evaluation profile: each filtered row's latest run under that profile, crossed
-- with its label (y present = the dataset measured it; null = it failed there). `agreement` = share of rows where
-- both say the same (label present and re-run correct, or label null and re-run failed); the measured/label ratio
-- quantiles are over rows with both a measured median and a label. Runs recorded without a profile count as
-- '(not recorded)'. `$profile` narrows to one profile.
WITH latest AS (
    SELECT coalesce(r.profile, '(not recorded)') AS profile, r.row_id, r.status, r.median_ms
    FROM runs r
    QUALIFY r.recency = min(r.recency) OVER (PARTITION BY coalesce(r.profile, '(not recorded)'), r.row_id)
),
crossed AS (
    SELECT l.profile, p.ok AS label_ok, l.status = 'ok' AS measured_ok, l.median_ms / nullif(p.y, 0) AS ratio
    FROM latest l
    JOIN filtered($filter) p ON p.id = l.row_id
    WHERE $profile::VARCHAR IS NULL OR l.profile = $profile::VARCHAR
)
SELECT
    profile,
    count(*) AS rows,
    count(*) FILTER (WHERE label_ok AND measured_ok) AS label_ok_measured_ok,
    count(*) FILTER (WHERE label_ok AND NOT measured_ok) AS label_ok_measured_failed,
    count(*) FILTER (WHERE NOT label_ok AND measured_ok) AS label_null_measured_ok,
    count(*) FILTER (WHERE NOT label_ok AND NOT measured_ok) AS label_null_measured_failed,
    count(*) FILTER (WHERE label_ok = measured_ok) / count(*) AS agreement,
    count(ratio) AS rows_with_ratio,
    quantile_cont(ratio, 0.1) AS ratio_p10,
    quantile_cont(ratio, 0.5) AS ratio_median,
    quantile_cont(ratio, 0.9) AS ratio_p90
FROM crossed
GROUP BY profile
ORDER BY rows DESC, profile;
