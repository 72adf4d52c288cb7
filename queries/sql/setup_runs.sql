-- At connect and whenever result files change: run results, the latest result of each row, and that latest
-- verdict copied onto the row in `programs` (so filters on it need no join).
CREATE OR REPLACE TABLE runs AS
SELECT * FROM runs_arrow;

CREATE OR REPLACE VIEW runs_latest AS
SELECT * FROM runs
WHERE row_id IS NOT NULL
QUALIFY row_number() OVER (
    PARTITION BY row_id ORDER BY finished_at DESC NULLS LAST, results_file DESC, line DESC
) = 1;

UPDATE programs SET measured_status = NULL, measured_error = NULL WHERE measured_status IS NOT NULL;

UPDATE programs SET measured_status = r.status, measured_error = r.error_type
FROM runs_latest r
WHERE programs.id = r.row_id;
