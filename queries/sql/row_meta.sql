-- One row of the index.
SELECT * FROM programs WHERE id = $row_id;
