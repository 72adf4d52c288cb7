-- Every train row with why a leakage-free training set leaves it out (null: kept), against the test rows of the
-- holdout groups $groups (null: every group): 'test_problem_key' (its problem is a test problem),
-- 'test_kernelbench_name' (its KernelBench name is a test problem's, under another reference text),
-- 'near_copy_of_test' (its near-duplicate component holds a test row: the component, not the cluster, so a row
-- linked to a test row through a chain of near-copies leaves too); with $representative, 'near_copy_folded'
-- for every kept row of a cluster but one: the fastest correct (ok, lowest y, then id; a cluster without a
-- correct row keeps its first id). A KernelBench name is a title `L<level> <name>` less the ` · <key>` suffix
-- that setup_problems.sql adds to names shared by several keys.
WITH test AS (
    SELECT problem_key, near_dup_component,
           CASE WHEN regexp_matches(title, '^L[0-9]+ ') THEN regexp_replace(title, ' · [0-9a-f]{6}$', '') END AS kb_name
    FROM programs
    WHERE split = 'test' AND ($groups::VARCHAR[] IS NULL OR list_contains($groups::VARCHAR[], holdout_group))
),
judged AS (
    SELECT p.*,
           CASE WHEN p.problem_key IN (SELECT problem_key FROM test) THEN 'test_problem_key'
                WHEN regexp_matches(p.title, '^L[0-9]+ ')
                     AND regexp_replace(p.title, ' · [0-9a-f]{6}$', '') IN (SELECT kb_name FROM test WHERE kb_name IS NOT NULL)
                     THEN 'test_kernelbench_name'
                WHEN p.near_dup_component IN (SELECT near_dup_component FROM test WHERE near_dup_component IS NOT NULL)
                     THEN 'near_copy_of_test'
           END AS removed_reason
    FROM programs p
    WHERE p.split = 'train'
)
SELECT * EXCLUDE (removed_reason),
       CASE WHEN removed_reason IS NULL AND $representative::BOOLEAN AND near_dup_cluster IS NOT NULL
                 AND row_number() OVER (PARTITION BY removed_reason IS NULL, near_dup_cluster
                                        ORDER BY ok DESC, y NULLS LAST, id) > 1
            THEN 'near_copy_folded' ELSE removed_reason END AS removed_reason
FROM judged
ORDER BY id;
