-- At connect: one title per problem, unique per problem key (a name shared by several keys gets the key's first
-- six hex digits; an empty one becomes "problem <key>"). The unfiltered problems table: setup_problem_stats.sql.
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

-- Rows without a test id of their problem take the level of its KernelBench name (`L2 ...`, from
-- queries/kernelbench_problems.json), so the level filter finds train-only KernelBench problems too.
UPDATE programs SET level = TRY_CAST(regexp_extract(title, '^L([0-9]+) ', 1) AS INTEGER)
WHERE level IS NULL AND regexp_matches(title, '^L[0-9]+ ');
