-- Per problem over the filtered rows: candidates, distinct candidates, failures, label quantiles of the ranked
-- candidates (the candidate filter), best row.
SELECT * FROM problem_table($filter, $c_no_triton::BOOLEAN, $c_flagged::BOOLEAN)
ORDER BY problem_key;
