-- The latest verdict of one row (`runs_latest`, setup_runs.sql); no row when it was never run.
SELECT * FROM runs_latest WHERE row_id = $row_id;
