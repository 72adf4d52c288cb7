-- The fastest correct row of each problem among the filtered rows (ties by id).
SELECT * FROM filtered(
    $f_split::VARCHAR, $f_holdout::VARCHAR, $f_problem::VARCHAR, $f_status::VARCHAR, $f_error::VARCHAR,
    $f_source::VARCHAR)
WHERE ok
QUALIFY row_number() OVER (PARTITION BY problem_key ORDER BY y, id) = 1
ORDER BY problem_key;
