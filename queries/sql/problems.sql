-- Per problem over the filtered rows: candidates, distinct candidates, failures, y quantiles, best row.
SELECT * FROM problem_table(
    $f_split::VARCHAR, $f_holdout::VARCHAR, $f_problem::VARCHAR, $f_status::VARCHAR, $f_error::VARCHAR,
    $f_source::VARCHAR)
ORDER BY problem_key;
