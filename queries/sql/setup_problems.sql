-- At connect: the unfiltered problems table, so the default view of it is a plain scan.
CREATE TABLE problem_stats AS
SELECT * FROM problem_table(NULL, NULL, NULL, NULL, NULL, NULL)
ORDER BY problem_key;
