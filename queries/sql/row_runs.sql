-- Every run result of one row, newest first.
SELECT * FROM runs WHERE row_id = $row_id ORDER BY finished_at DESC NULLS LAST, results_file DESC, line DESC;
