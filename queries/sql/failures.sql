-- Failed rows by cause, each row counted once: a row fails when its label is empty or its latest re-run failed.
-- Its cause is the most trusted one it has (setup_causes.sql): the latest measured verdict where the row was
-- re-run ('ok' = the re-run passed although the label is empty), else its latest CPU triage where that passed or
-- failed ('passed' = compiles and shapes match, the rest needs a GPU), else the static finding of ingest
-- ('ok_static' = nothing found). `basis` says what each count rests on (the GPU, the triage's torch and target).
-- With an error-source filter every row is counted by that source.
WITH rows AS (
    SELECT * FROM filtered($filter)
    WHERE NOT ok OR measured_status = 'failed'
),
sourced AS (
    SELECT *, cause_source($filter['source']::VARCHAR, measured_status, triage_status) AS source FROM rows
),
causes AS (
    SELECT s.problem_key, s.source,
           cause_error(s.source, s.static_error, s.measured_status, s.measured_error, s.triage_status,
                       s.triage_error) AS error_type,
           cause_basis(s.source, r.gpu, r.device, s.triage_basis) AS basis
    FROM sourced s
    LEFT JOIN runs_latest r ON s.source = 'measured' AND r.row_id = s.id
)
SELECT source, basis, error_type, count(*) AS rows, count(DISTINCT problem_key) AS problems,
       count(*) / sum(count(*)) OVER () AS share
FROM causes
GROUP BY source, basis, error_type
ORDER BY rows DESC, source, basis, error_type;
