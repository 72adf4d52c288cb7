-- Rows and failures per number of Triton kernels in the candidate.
SELECT
    n_kernels,
    count(*) AS rows,
    count(*) FILTER (WHERE NOT ok) AS failed_rows
FROM filtered($filter)
GROUP BY n_kernels
ORDER BY n_kernels;
