-- Failed rows by cause, each row counted once: a row fails when its label is empty or its latest re-run failed.
-- Its cause is the latest measured verdict where the row was re-run (source 'measured'; 'ok' = the re-run passed
-- although the label is empty), else the static finding of ingest (source 'static'; 'ok_static' = nothing found).
-- With the error-source filter 'static' every row is counted by its static finding.
WITH rows AS (
    SELECT * FROM filtered($filter)
    WHERE NOT ok OR measured_status = 'failed'
),
causes AS (
    SELECT
        problem_key,
        CASE WHEN by_static THEN 'static' ELSE 'measured' END AS source,
        CASE WHEN by_static THEN static_error ELSE coalesce(measured_error, measured_status) END
            AS error_type
    FROM (SELECT *, (measured_status IS NULL OR coalesce($filter['source']::VARCHAR = 'static', false)) AS by_static
          FROM rows)
)
SELECT source, error_type, count(*) AS rows, count(DISTINCT problem_key) AS problems,
       count(*) / sum(count(*)) OVER () AS share
FROM causes
GROUP BY source, error_type
ORDER BY rows DESC, source, error_type;
