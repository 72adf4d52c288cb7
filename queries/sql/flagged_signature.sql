-- Which rows are flagged (count and an order-free hash of their ids): the problems table is rebuilt only when
-- this changes after new run results.
SELECT count(*), coalesce(bit_xor(hash(id)), 0) FROM programs WHERE flagged;
