"""`streamlit run app.py` with the first visitor's wait done before the server starts listening.

A fresh server's first page load pays for imports (pandas, DuckDB, Plotly, pyarrow.compute, the queries layer),
opening the store (index and run results into DuckDB) and the overview's queries. Here they run first, in this
process, so the connection cache (`queries.db.connect`) and the imported modules are there when Streamlit runs
app.py for the first session. Arguments after the script name go to `streamlit run` (e.g. `--server.port 8501`).
`make run` (scripts/serve_local.py) starts the explorer this way; BENCHMARKS.md has the cold-load figures.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def preload() -> float:
    """Import what the pages use and open the configured store with its overview; returns the seconds spent."""
    started = time.perf_counter()
    sys.path.insert(0, str(REPO))
    import pandas  # noqa: F401  (DuckDB loads it for Arrow tables; Streamlit for data frames)
    import plotly.graph_objects  # noqa: F401

    from common.settings import load_settings
    from queries import api
    from runner.rows import StoreUnavailable, resolve_store

    try:
        settings = load_settings()  # once, at the script's entry
        store = resolve_store(None, settings)  # TLX_STORE, else the embedded sample store (built on first use)
        api.overview(store, settings)
        api.failures(store, settings)
        api.problems(store, settings)
    except (api.StoreError, StoreUnavailable, OSError, ValueError) as error:  # the app shows it to the visitor
        print(f"[serve] store not preloaded: {error}", file=sys.stderr)
    return time.perf_counter() - started


def main() -> int:
    seconds = preload()
    print(f"[serve] imports and store ready in {seconds:.1f} s; starting Streamlit", file=sys.stderr, flush=True)
    from streamlit.web import cli

    sys.argv = ["streamlit", "run", str(REPO / "app.py"), *sys.argv[1:]]
    return cli.main()


if __name__ == "__main__":
    sys.exit(main())
