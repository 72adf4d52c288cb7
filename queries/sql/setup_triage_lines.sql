-- At connect, and when a triage file was removed, replaced or cut short: every triage line is read again
-- (queries/triage.py), so the triage tables start empty and no row keeps a triage; setup_triage.sql fills them.
CREATE OR REPLACE TABLE triage AS SELECT * FROM triage_new LIMIT 0;
CREATE OR REPLACE TABLE triage_latest AS SELECT * FROM triage_new LIMIT 0;
UPDATE programs SET triage_status = NULL, triage_error = NULL, triage_basis = NULL WHERE triage_status IS NOT NULL;
