"""Shared Streamlit pieces for the explorer pages: context, links, charts, code/diff, widgets, re-runs."""
