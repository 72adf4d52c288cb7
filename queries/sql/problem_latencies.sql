-- Every filtered row of one problem (the macro's problem argument) with its label: the latency distribution.
SELECT id, y, ok, split
FROM filtered($filter)
ORDER BY y NULLS LAST, id;
