-- At connect, and when a triage file was removed, replaced or cut short: every triage line is read again, so the
-- table of all triage lines (`TRIAGE_COLUMNS`, common/triage_log.py) starts empty; setup_triage.sql fills it.
CREATE OR REPLACE TABLE triage_lines AS SELECT * FROM triage_new LIMIT 0;
