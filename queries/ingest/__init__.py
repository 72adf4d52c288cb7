"""The write side of the data layer: building a store from dataset Parquet files (`python -m queries ingest`).

`pipeline.ingest` runs both stages and swaps the build in; `build` (stage 1: `read`, `scan`, `refs`,
`code_writer`, `progress`), `syntax_check` (stage 2), `sources` (what the arguments name) and `sample` (the
embedded sample store) are its parts. The store's layout and index schema belong to `queries.store`.
"""

from queries.ingest.build import IngestError
from queries.ingest.pipeline import format_summary, ingest
from queries.ingest.sample import ensure_sample_store, sample_files

__all__ = ["IngestError", "ensure_sample_store", "format_summary", "ingest", "sample_files"]
