-- The program hash of each named row this store holds (rows it does not hold are left out).
SELECT id, program_sha256 FROM programs WHERE list_contains($ids::VARCHAR[], id) ORDER BY id;
