-- The latest CPU triage of one row (`triage_latest`, setup_triage.sql) and what it rests on in words; no row when
-- it was never triaged.
SELECT *, triage_basis(torch, target) AS basis FROM triage_latest WHERE row_id = $row_id;
