-- Rows per flag among the filtered rows (static flags and the latest run's, by entry name), with the entry's
-- kind, label, meaning and hack (the `checks` table; `ref_<name>`: the runner's flag about the reference's timing;
-- a flag this version does not know has kind 'unknown').
WITH rows AS (
    SELECT static_flags, run_flags FROM filtered($filter)
), counted AS (
    -- static and run flags have no name in common, and run_flags holds each name once: one row counts once
    SELECT flag, count(*) AS rows
    FROM (SELECT unnest(static_flags) AS flag FROM rows UNION ALL SELECT unnest(run_flags) FROM rows)
    GROUP BY flag
)
SELECT c.flag, coalesce(k.kind, 'unknown') AS kind,
       CASE WHEN k.name IS NULL THEN c.flag WHEN k.name = c.flag THEN k.label ELSE 'reference: ' || k.label END
           AS label,
       coalesce(k.hack, false) AND k.name = c.flag AS hack, c.rows, c.rows / (SELECT count(*) FROM rows) AS share,
       CASE WHEN k.name IS NULL THEN 'not a flag this version knows' WHEN k.name = c.flag THEN k.meaning
            ELSE 'About the reference Model''s timing: ' || k.meaning END AS meaning
FROM counted c LEFT JOIN checks k ON k.name = c.flag OR 'ref_' || k.name = c.flag
ORDER BY c.rows DESC, c.flag;
