-- At connect: one title per problem, unique per problem key (a name shared by several keys gets the key's first
-- six hex digits; an empty one becomes "problem <key>"), then the unfiltered problems table, so the default view
-- of it is a plain scan.
UPDATE programs SET title = t.title
FROM (
    SELECT problem_key,
           CASE WHEN coalesce(min(title), '') = '' THEN 'problem ' || problem_key ELSE min(title) END AS title
    FROM programs GROUP BY problem_key
) t
WHERE programs.problem_key = t.problem_key AND programs.title IS DISTINCT FROM t.title;

UPDATE programs SET title = programs.title || ' · ' || left(programs.problem_key, 6)
FROM (
    SELECT title FROM (SELECT DISTINCT problem_key, title FROM programs) GROUP BY title HAVING count(*) > 1
) shared
WHERE programs.title = shared.title;

CREATE TABLE problem_stats AS
SELECT * FROM problem_table(NULL, NULL, NULL, NULL, NULL, NULL)
ORDER BY problem_key;
