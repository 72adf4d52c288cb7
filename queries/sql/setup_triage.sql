-- At connect and whenever triage files change: the lines added since the last load (`triage_new`, read by
-- queries/triage.py) join `triage_lines`; then the CPU triage results of this store's programs (design §3:
-- a source of its own, never a measurement), the latest triage of each row, and its status and error type copied
-- onto the row in `programs` (so filters on it need no join).
-- A triage belongs to a row as a run result does (setup_runs.sql): it names the row's id AND the row's program
-- hash, or no hash at all. `recency`: 1 for the newest triage of all, by `triaged_at` (unknown times oldest),
-- then triage file name, then line, both descending.
INSERT INTO triage_lines SELECT * FROM triage_new;

CREATE OR REPLACE TABLE triage AS
SELECT t.*, row_number() OVER (ORDER BY t.triaged_at DESC NULLS LAST, t.triage_file DESC, t.line DESC) AS recency
FROM triage_lines t
JOIN programs p ON p.id = t.row_id AND (t.program_sha256 IS NULL OR t.program_sha256 = p.program_sha256)
WHERE t.triage_status IS NOT NULL;

CREATE OR REPLACE VIEW triage_latest AS
SELECT * FROM triage
QUALIFY recency = min(recency) OVER (PARTITION BY row_id);

UPDATE programs SET triage_status = NULL, triage_error = NULL
WHERE triage_status IS NOT NULL;

UPDATE programs SET triage_status = t.triage_status, triage_error = t.error_type
FROM triage_latest t
WHERE programs.id = t.row_id;
