-- Rows picked for a bulk re-run: the pages' filters, plus a problem named by key or test id; where each row's
-- code lives (part, row group), in id order.
SELECT id, code_shard, code_rg FROM filtered(
    $f_split::VARCHAR, $f_holdout::VARCHAR, $f_problem::VARCHAR, $f_status::VARCHAR, $f_error::VARCHAR,
    $f_source::VARCHAR,
    $f_level::INTEGER, $f_flag::VARCHAR, $f_triage::VARCHAR, $f_triage_error::VARCHAR)
WHERE $problem::VARCHAR IS NULL OR problem_key = $problem::VARCHAR OR problem_id = $problem::VARCHAR
ORDER BY id;
