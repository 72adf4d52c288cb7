-- Which rows are flagged or refuted (count and an order-free hash of their ids and marks): the problems table is
-- rebuilt only when this changes after new run results.
SELECT count(*), coalesce(bit_xor(hash(id, flagged, refuted)), 0) FROM programs WHERE flagged OR refuted;
