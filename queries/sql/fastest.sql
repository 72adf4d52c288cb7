-- The k fastest correct candidates of one problem, copies (same candidate_key) folded into their fastest row;
-- ties broken by id; speedup against the median label of the problem's filtered correct rows.
WITH rows AS (
    SELECT * FROM filtered(
        $f_split::VARCHAR, $f_holdout::VARCHAR, $f_problem::VARCHAR, $f_status::VARCHAR, $f_error::VARCHAR,
    $f_source::VARCHAR)
    WHERE problem_key = $problem_key AND ok
),
med AS (SELECT median(y) AS y_median FROM rows),
folded AS (
    SELECT
        candidate_key,
        arg_min(id, (y, id)) AS id,
        min(y) AS y,
        max(y) AS y_copies_max,
        count(*) AS copies
    FROM rows
    GROUP BY candidate_key
)
SELECT
    row_number() OVER (ORDER BY f.y, f.id) AS rank,
    f.id,
    f.y,
    f.copies,
    f.y_copies_max,
    med.y_median / f.y AS speedup_vs_median,
    p.split,
    p.n_kernels,
    p.kernel_names,
    p.autotuned,
    p.cand_chars,
    f.candidate_key
FROM folded f
CROSS JOIN med
JOIN programs p ON p.id = f.id
ORDER BY f.y, f.id
LIMIT $k;
