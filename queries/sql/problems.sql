-- Per problem over the filtered rows: candidates, distinct candidates, failures, label quantiles of the ranked
-- candidates (the candidate filter), best row.
SELECT * FROM problem_table(
    $f_split::VARCHAR, $f_holdout::VARCHAR, $f_problem::VARCHAR, $f_status::VARCHAR, $f_error::VARCHAR,
    $f_source::VARCHAR, $f_level::INTEGER, $f_flag::VARCHAR, $f_triage::VARCHAR,
    $f_triage_error::VARCHAR, $c_no_triton::BOOLEAN, $c_flagged::BOOLEAN)
ORDER BY problem_key;
