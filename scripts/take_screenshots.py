"""The README tour's screenshots: the embedded sample store with its shipped H200 runs, a local runner service
(CPU interpreter) for the Re-run shot, Debian chromium headless through Playwright, at two window sizes:
1400×900 (`docs/screenshots/*.png`, the README's) and 1000×800 (`docs/screenshots/1000px/*.png`: a laptop's
window, where text must wrap rather than be cut).

    python scripts/take_screenshots.py [--out docs/screenshots]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from urllib.parse import quote, urlencode

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.ui_services import CHROMIUM, runner_service, streamlit_command, streamlit_server  # noqa: E402

CONSOLE_EXAMPLE = "SELECT title, count(*) AS rows FROM programs GROUP BY title ORDER BY rows DESC"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]
WINDOWS = {"": {"width": 1400, "height": 900}, "1000px": {"width": 1000, "height": 800}}  # subfolder: window


def _settle(tab) -> None:
    tab.wait_for_selector("[data-testid='stMain'] h1", timeout=60000)
    tab.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')"
                          " && !document.querySelector('[data-testid=\"stSkeleton\"]')", timeout=60000)
    tab.wait_for_timeout(1500)  # charts and grids draw after the run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "screenshots")
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    from common.settings import load_settings
    from queries import api
    from queries.filters import Filters
    from runner.rows import resolve_store

    settings = load_settings()  # once, at the script's entry
    store = resolve_store(None, settings)  # TLX_STORE, else the embedded sample store
    runs = Path(tempfile.mkdtemp(prefix="tlx-shots-runs-"))
    problem = api.problems(store, settings, sort="candidates").to_pylist()[0]["problem_key"]
    failed = api.failure_examples(store, settings, Filters(error_type="compile_error", error_source="measured"), limit=1)
    failed_row = failed["id"][0].as_py()
    views = [
        ("overview", "/"), ("problems", "/problems"), ("problem", f"/problem?problem={problem}&view=ecdf"),
        ("row", f"/row?row={quote(failed_row, safe='')}"), ("failures", "/failures"),
        ("search", "/search?q=tl.dot"), ("runs", "/runs"), ("export", "/export"),
        ("sql", "/sql?" + urlencode({"sql": CONSOLE_EXAMPLE})),
    ]
    args.out.mkdir(parents=True, exist_ok=True)
    with runner_service(store, runs) as (runner_url, token):
        env = {"TLX_STORE": str(store), "TLX_RUNS_DIR": str(runs), "TLX_RUNNER_URL": runner_url,
               "TLX_RUNNER_TOKEN": token, "TLX_READ_ONLY": "0"}
        with streamlit_server(env, command=streamlit_command) as base, sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
            for folder, window in WINDOWS.items():
                out = args.out / folder
                out.mkdir(parents=True, exist_ok=True)
                tab = browser.new_page(viewport=window)
                for name, path in views:
                    tab.goto(base + path)
                    _settle(tab)
                    tab.screenshot(path=str(out / f"{name}.png"), full_page=name not in ("row", "problem"))
                    print(f"{window['width']} px {name}: {path}", file=sys.stderr)
                tab.goto(base + "/row?row=" + quote("train/000001", safe=""))
                _settle(tab)
                tab.get_by_role("button", name="Re-run this program").click()
                tab.wait_for_selector("text=just finished", timeout=180000)
                _settle(tab)
                tab.screenshot(path=str(out / "rerun.png"))
                print(f"{window['width']} px rerun: train/000001", file=sys.stderr)
                tab.close()
            browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
