-- Rows picked for a bulk re-run: the pages' filters, plus a problem named by key or test id; where each row's
-- code lives (part, row group), in id order.
SELECT id, code_shard, code_rg FROM filtered($filter)
WHERE $problem::VARCHAR IS NULL OR problem_key = $problem::VARCHAR OR problem_id = $problem::VARCHAR
ORDER BY id;
