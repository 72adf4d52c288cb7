-- Rows and failures per number of Triton kernels in the candidate.
SELECT
    n_kernels,
    count(*) AS rows,
    count(*) FILTER (WHERE NOT ok) AS failed_rows
FROM filtered(
    $f_split::VARCHAR, $f_holdout::VARCHAR, $f_problem::VARCHAR, $f_status::VARCHAR, $f_error::VARCHAR,
    $f_source::VARCHAR,
    $f_level::INTEGER, $f_flag::VARCHAR, $f_triage::VARCHAR, $f_triage_error::VARCHAR)
GROUP BY n_kernels
ORDER BY n_kernels;
