"""The read-only SQL console: statements run in worker processes with time and memory limits."""
