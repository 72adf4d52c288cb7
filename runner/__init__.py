"""Evaluation of untrusted dataset programs: sandbox, evaluation, service, client, bulk re-runs.

Imports only the standard library, torch and triton (never streamlit, duckdb or `queries` at module level)."""
