-- Every filtered row of one problem with its label (the latency distribution).
SELECT id, y, ok, split, holdout_group, candidate_key, static_error
FROM filtered(
    $f_split::VARCHAR, $f_holdout::VARCHAR, $f_problem::VARCHAR, $f_status::VARCHAR, $f_error::VARCHAR,
    $f_source::VARCHAR)
WHERE problem_key = $problem_key
ORDER BY y NULLS LAST, id;
