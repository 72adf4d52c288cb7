"""Data layer of the explorer: settings, sources, program parsing, ingest, the store, and DuckDB queries over it."""
