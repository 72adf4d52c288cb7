"""The hosted explorer's image (Dockerfile), built with scripts/build_image.sh and started for real.

Started with `podman run` where the runtime allows, else by chroot into the mounted image (and once by chroot
regardless, the way that works where no runtime does); each says which way it ran (see the summary lines). Then
a real HTTP client and Debian chromium check that the explorer listens on 7860 as UID 1000 and serves read-only.
"""

from __future__ import annotations

import time
import urllib.request
from urllib.parse import quote

import pytest

from tests.image_runtime import (
    PORT,
    build_image,
    image_config,
    listeners,
    mounted_image,
    process_uid,
    require_image_tools,
    started_image,
    user_ids,
)
from tests.ui_services import CHROMIUM, require_chromium

pytestmark = [pytest.mark.container, pytest.mark.slow]


@pytest.fixture(scope="module")
def image_root():
    """The built image's filesystem, mounted read-only; yields (root, seconds the build took)."""
    require_image_tools()
    seconds = build_image()
    with mounted_image() as root:
        yield root, seconds


def test_image_holds_the_explorer_only(image_root):
    root, _ = image_root
    config = image_config()
    assert config["User"] == "user" and user_ids(root, "user") == (1000, 1000)
    assert "TLX_READ_ONLY=1" in config["Env"] and f"PORT={PORT}" in config["Env"]
    assert (root / "home/user/store/index.parquet").is_file(), "the sample store is built at image build time"
    site_packages = list(root.glob("**/site-packages/streamlit"))
    assert site_packages, "streamlit is not installed in the image"
    assert not list(site_packages[0].parent.glob("torch*")), "torch is in the image (explorer only)"


def first_row_page(url: str) -> float:
    """Open a row in chromium and check it renders read-only, with no re-run control; returns the seconds."""
    from playwright.sync_api import sync_playwright

    started = time.monotonic()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=[
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync"])
        tab = browser.new_page(viewport={"width": 1400, "height": 1000})
        tab.goto(f"{url}/row?row={quote('train/000000', safe='')}")
        tab.get_by_text("read-only: re-runs and writes are off").first.wait_for(timeout=60000)
        tab.get_by_text("class ModelNew", exact=False).first.wait_for(timeout=60000)
        seconds = time.monotonic() - started
        assert tab.locator('[data-testid="stException"]').count() == 0
        assert tab.get_by_role("heading", name="Re-run").count() == 0
        assert tab.get_by_text("No runner service is reachable", exact=False).count() == 0
        browser.close()
    return seconds


@pytest.mark.browser
@pytest.mark.parametrize("way", ["runtime", "chroot"])
def test_image_serves_read_only_on_7860_as_uid_1000(image_root, way, tmp_path, record_property):
    require_chromium()
    root, build_seconds = image_root
    record_property("image build (scripts/build_image.sh, once this session)", f"{build_seconds:.0f} s")
    with started_image(way, root, tmp_path / "server.log") as server:
        record_property("started by", server.way)
        record_property("start to first healthy answer", f"{server.seconds:.1f} s")
        assert process_uid(server.pid) == 1000
        assert (PORT, 1000) in listeners(server.pid), "no socket listening on 7860 owned by UID 1000"
        with urllib.request.urlopen(server.url + "/_stcore/health", timeout=10) as answer:
            assert answer.read() == b"ok"
        with urllib.request.urlopen(server.url + "/", timeout=10) as answer:
            assert answer.status == 200 and answer.headers.get_content_type() == "text/html"
            assert b'id="root"' in answer.read()
        record_property("row page drawn in chromium after", f"{first_row_page(server.url):.1f} s")
