-- The k fastest correct candidates of one problem (the macro's problem argument), copies (same candidate_key)
-- folded into their fastest row, ties broken by id; speedup against the median label of the problem's
-- filtered correct rows.
WITH rows AS (
    SELECT id, y, split, n_kernels, kernel_names, autotuned, cand_chars, candidate_key
    FROM filtered(
        $f_split::VARCHAR, $f_holdout::VARCHAR, $f_problem::VARCHAR, $f_status::VARCHAR, $f_error::VARCHAR,
    $f_source::VARCHAR)
    WHERE ok
),
copies AS (
    SELECT
        *,
        row_number() OVER (PARTITION BY candidate_key ORDER BY y, id) AS copy_rank,
        count(*) OVER (PARTITION BY candidate_key) AS copies,
        max(y) OVER (PARTITION BY candidate_key) AS y_copies_max
    FROM rows
)
SELECT
    row_number() OVER (ORDER BY y, id) AS rank,
    id,
    y,
    copies,
    y_copies_max,
    (SELECT median(y) FROM rows) / y AS speedup_vs_median,
    split,
    n_kernels,
    kernel_names,
    autotuned,
    cand_chars,
    candidate_key
FROM copies
WHERE copy_rank = 1
ORDER BY y, id
LIMIT $k;
