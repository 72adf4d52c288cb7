-- Filtered rows whose label is empty and that were never re-run: what a bulk re-run would add measured causes to.
SELECT id FROM filtered($filter)
WHERE NOT ok AND measured_status IS NULL
ORDER BY id;
