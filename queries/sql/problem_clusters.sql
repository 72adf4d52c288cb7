-- The near-duplicate clusters holding rows of one problem ($problem): per cluster its rows of this problem and
-- of the whole store (a cluster may span problems), the fastest correct member of this problem (ties by id),
-- the label spread among its correct rows (slowest ÷ fastest), failed rows and splits; largest first.
WITH members AS (
    SELECT near_dup_cluster AS cluster, id, split, y, ok
    FROM programs
    WHERE problem_key = $problem AND near_dup_cluster IS NOT NULL
),
sizes AS (
    SELECT near_dup_cluster AS cluster, count(*) AS rows_in_store
    FROM programs
    WHERE near_dup_cluster IN (SELECT cluster FROM members)
    GROUP BY near_dup_cluster
)
SELECT m.cluster,
       count(*) AS rows,
       any_value(s.rows_in_store) AS rows_in_store,
       first(m.id ORDER BY m.y, m.id) FILTER (WHERE m.ok) AS fastest_id,
       min(m.y) FILTER (WHERE m.ok) AS fastest_y,
       median(m.y) FILTER (WHERE m.ok) AS median_y,
       max(m.y) FILTER (WHERE m.ok) AS slowest_y,
       max(m.y) FILTER (WHERE m.ok) / nullif(min(m.y) FILTER (WHERE m.ok), 0) AS spread,
       count(*) FILTER (WHERE NOT m.ok) AS failed,
       count(*) FILTER (WHERE m.split = 'train') AS train_rows,
       count(*) FILTER (WHERE m.split = 'test') AS test_rows
FROM members m
JOIN sizes s USING (cluster)
GROUP BY m.cluster
ORDER BY rows DESC, m.cluster
LIMIT $limit;
