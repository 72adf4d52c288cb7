-- Rows per flag among the filtered rows (static flags and the latest run's, by entry name), with the entry's
-- kind, label, meaning and hack (the `checks` table; a flag this version does not know has kind 'unknown').
WITH rows AS (
    SELECT row_flags FROM filtered(
        $f_split::VARCHAR, $f_holdout::VARCHAR, $f_problem::VARCHAR, $f_status::VARCHAR, $f_error::VARCHAR,
        $f_source::VARCHAR,
        $f_level::INTEGER, $f_flag::VARCHAR)
), counted AS (
    SELECT flag, count(*) AS rows FROM (SELECT unnest(row_flags) AS flag FROM rows) GROUP BY flag
)
SELECT c.flag, coalesce(k.kind, 'unknown') AS kind, coalesce(k.label, c.flag) AS label,
       coalesce(k.hack, false) AS hack, c.rows, c.rows / (SELECT count(*) FROM rows) AS share,
       coalesce(k.meaning, 'not a flag this version knows') AS meaning
FROM counted c LEFT JOIN checks k ON k.name = c.flag
ORDER BY c.rows DESC, c.flag;
