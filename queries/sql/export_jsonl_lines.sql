-- One JSON object per row of the table being exported (registered as export_arrow), in its order.
SELECT to_json(r) AS line FROM export_arrow r;
