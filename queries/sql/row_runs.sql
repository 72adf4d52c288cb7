-- Every run result of one row, newest first (`recency`, setup_runs.sql).
SELECT * FROM runs WHERE row_id = $row_id ORDER BY recency;
