-- Quantiles of the label y over the filtered rows that have a finite one (overview_totals counts the others).
WITH q AS (
    SELECT quantile_cont(y, [0.0, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 1.0]) FILTER (WHERE isfinite(y)) AS ys
    FROM filtered($filter)
)
SELECT
    unnest([0.0, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 1.0]) AS q,
    unnest(coalesce(ys, [NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL]::DOUBLE[])) AS y
FROM q;
