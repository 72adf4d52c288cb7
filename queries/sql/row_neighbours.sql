-- Place of one row in its problem's ranking (y ascending, failures last, ties by id): previous and next ids.
-- One pass over the problem's rows comparing ranking keys; no sort.
WITH cur AS (
    SELECT problem_key, (y IS NULL, coalesce(y, 0), id) AS k FROM programs WHERE id = $row_id
),
ranked AS (
    SELECT id, (y IS NULL, coalesce(y, 0), id) AS k
    FROM programs
    WHERE problem_key = (SELECT problem_key FROM cur)
)
SELECT
    arg_max(id, k) FILTER (WHERE k < (SELECT k FROM cur)) AS prev_id,
    arg_min(id, k) FILTER (WHERE k > (SELECT k FROM cur)) AS next_id,
    count(*) FILTER (WHERE k <= (SELECT k FROM cur)) AS position,
    count(*) AS problem_rows
FROM ranked;
