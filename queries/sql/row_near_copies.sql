-- The other rows of a row's near-duplicate cluster ($row_id), fastest label first (failed rows last, by id):
-- their label, split, problem (whether it is the row's own) and latest re-run verdict; at most $limit.
SELECT p.id, p.split, p.y, p.ok, p.measured_status, p.title, p.problem_key, p.problem_key = r.problem_key AS same_problem
FROM programs r
JOIN programs p ON p.near_dup_cluster = r.near_dup_cluster AND p.id <> r.id
WHERE r.id = $row_id
ORDER BY p.y NULLS LAST, p.id
LIMIT $limit;
