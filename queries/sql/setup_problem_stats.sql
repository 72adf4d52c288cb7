-- At connect and whenever result files change (the latest runs' flags move rows in or out of the candidate
-- filter): the unfiltered problems table with the default candidate filter, so its default view is a plain scan.
CREATE OR REPLACE TABLE problem_stats AS
SELECT * FROM problem_table(NULL, false, false)
ORDER BY problem_key;
