-- Place of one row in its problem's ranking (y ascending, failures last, ties by id): previous and next ids.
WITH ranked AS (
    SELECT
        id,
        lag(id) OVER w AS prev_id,
        lead(id) OVER w AS next_id,
        row_number() OVER w AS position,
        count(*) OVER () AS problem_rows
    FROM programs
    WHERE problem_key = (SELECT problem_key FROM programs WHERE id = $row_id)
    WINDOW w AS (ORDER BY y NULLS LAST, id)
)
SELECT prev_id, next_id, position, problem_rows FROM ranked WHERE id = $row_id;
