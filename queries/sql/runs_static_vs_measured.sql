-- Static error (found at ingest) against the latest measured verdict, over the filtered rows that were re-run:
-- how often a static check predicts the measured failure, and what it misses.
SELECT
    p.static_error,
    coalesce(r.error_type, r.status) AS measured,
    count(*) AS rows
FROM runs_latest r
JOIN filtered($filter) p ON p.id = r.row_id
GROUP BY ALL
ORDER BY rows DESC, static_error, measured;
