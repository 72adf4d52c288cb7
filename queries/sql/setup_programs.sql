-- At connect: the index as an in-memory table, sorted by problem so per-problem questions touch few row groups;
-- measured_status / measured_error hold the latest run result of each row (filled by setup_runs.sql).
CREATE TABLE programs AS
SELECT *, NULL::VARCHAR AS measured_status, NULL::VARCHAR AS measured_error
FROM index_arrow
ORDER BY problem_key, id;
