-- Every filtered row of one problem (the macro's problem argument) with its label: the latency distribution.
SELECT id, y, ok, split
FROM filtered(
    $f_split::VARCHAR, $f_holdout::VARCHAR, $f_problem::VARCHAR, $f_status::VARCHAR, $f_error::VARCHAR,
    $f_source::VARCHAR,
    $f_level::INTEGER, $f_flag::VARCHAR, $f_triage::VARCHAR, $f_triage_error::VARCHAR)
ORDER BY y NULLS LAST, id;
