"""Bulk re-runs of store rows: the command and its local and Ray backends."""
