-- The filtered index rows, by id.
SELECT * FROM filtered($filter)
ORDER BY id;
