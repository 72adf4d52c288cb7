-- The label y over the filtered rows, binned on a log10 scale ($bins_per_decade bins per factor of ten):
-- bin_lo/bin_hi are the bin's edges in label units. The overview draws it as a log-x histogram. Labels that are
-- not finite (inf, NaN: NaN sorts above every number) have no bin; overview_totals counts them.
WITH b AS (
    SELECT floor(log10(y) * $bins_per_decade::INTEGER) AS bin
    FROM filtered($filter)
    WHERE y > 0 AND isfinite(y)
)
SELECT
    pow(10, bin / $bins_per_decade::INTEGER) AS bin_lo,
    pow(10, (bin + 1) / $bins_per_decade::INTEGER) AS bin_hi,
    count(*) AS rows
FROM b
GROUP BY bin
ORDER BY bin;
