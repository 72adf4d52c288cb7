-- At connect and whenever result files change: run results, and the latest result of each row.
CREATE OR REPLACE TABLE runs AS
SELECT * FROM runs_arrow;

CREATE OR REPLACE VIEW runs_latest AS
SELECT * FROM runs
WHERE row_id IS NOT NULL
QUALIFY row_number() OVER (
    PARTITION BY row_id ORDER BY finished_at DESC NULLS LAST, results_file DESC, line DESC
) = 1;
