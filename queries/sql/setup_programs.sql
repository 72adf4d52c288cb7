-- At connect: the index as an in-memory table, sorted by problem so per-problem questions touch few row groups.
CREATE TABLE programs AS
SELECT * FROM index_arrow
ORDER BY problem_key, id;
