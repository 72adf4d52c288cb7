-- Failures by error type: static (the index, over label-failed rows) and measured (latest run result of each
-- filtered row that failed), kept apart by the source column.
WITH rows AS (
    SELECT * FROM filtered(
        $f_split::VARCHAR, $f_holdout::VARCHAR, $f_problem::VARCHAR, $f_status::VARCHAR, $f_error::VARCHAR,
    $f_source::VARCHAR)
),
static AS (
    SELECT 'static' AS source, static_error AS error_type, count(*) AS rows,
           count(DISTINCT problem_key) AS problems
    FROM rows
    WHERE NOT ok
    GROUP BY static_error
),
measured AS (
    SELECT 'measured' AS source, measured_error AS error_type, count(*) AS rows,
           count(DISTINCT problem_key) AS problems
    FROM rows
    WHERE measured_status <> 'ok'
    GROUP BY measured_error
),
both_sources AS (
    SELECT * FROM static
    UNION ALL
    SELECT * FROM measured
)
SELECT source, error_type, rows, problems, rows / sum(rows) OVER (PARTITION BY source) AS share
FROM both_sources
ORDER BY source DESC, rows DESC, error_type;
