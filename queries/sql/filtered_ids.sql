-- The ids (and code shard) of the filtered rows, for scans of the code shards.
SELECT id, code_shard FROM filtered($filter)
ORDER BY id;
