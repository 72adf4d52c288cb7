-- At connect and whenever triage files change, on the triage lines read since the last load (`triage_new`,
-- queries/triage.py; every line after setup_triage_lines.sql): the CPU triage results of this store's programs
-- (`triage`; design §3: a source of its own, never a measurement), the latest triage of each row
-- (`triage_latest`), and its status and error type copied onto the row in `programs` (so filters on it need no
-- join). Only the rows that new lines name are looked at again, so a running triage costs each refresh its new
-- lines, not the whole table.
-- A triage belongs to a row as a run result does (setup_runs.sql): it names the row's id AND the row's program
-- hash, or no hash at all. A row's latest triage is its newest by `triaged_at` (unknown times oldest), then
-- triage file name, then line, both descending.
CREATE OR REPLACE TEMP TABLE triage_added AS
SELECT t.*
FROM triage_new t
JOIN programs p ON p.id = t.row_id AND (t.program_sha256 IS NULL OR t.program_sha256 = p.program_sha256)
WHERE t.triage_status IS NOT NULL;

INSERT INTO triage SELECT * FROM triage_added;

CREATE OR REPLACE TEMP TABLE triage_renewed AS
SELECT * FROM (
    SELECT * FROM triage_latest WHERE row_id IN (SELECT row_id FROM triage_added)
    UNION ALL
    SELECT * FROM triage_added
)
QUALIFY row_number() OVER (PARTITION BY row_id ORDER BY triaged_at DESC NULLS LAST, triage_file DESC, line DESC) = 1;

DELETE FROM triage_latest WHERE row_id IN (SELECT row_id FROM triage_renewed);
INSERT INTO triage_latest SELECT * FROM triage_renewed;

UPDATE programs SET triage_status = r.triage_status, triage_error = r.error_type,
                    triage_basis = triage_basis(r.torch, r.target)
FROM triage_renewed r
WHERE programs.id = r.row_id;

DROP TABLE triage_added;
DROP TABLE triage_renewed;
