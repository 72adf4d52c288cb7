-- The fastest correct row of each problem among the filtered rows that pass the candidate filter
-- (`is_candidate`, see setup_filtered.sql) and are correct by their latest verdict too (`ranked_correct`), ties
-- by id.
SELECT * FROM filtered($filter)
WHERE ranked_correct(ok, refuted) AND is_candidate(n_kernels, flagged, $c_no_triton::BOOLEAN, $c_flagged::BOOLEAN)
QUALIFY row_number() OVER (PARTITION BY problem_key ORDER BY y, id) = 1
ORDER BY problem_key;
