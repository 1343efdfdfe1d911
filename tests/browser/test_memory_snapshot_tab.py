"""The Memory snapshot tab in headless Chromium, on the H200 snapshot uploaded alone and
with its profiler trace. Every chart must be drawn with data, the KPIs must show torch's own
peak (`h200_memsnap.expected.json`), and the tab must appear only on traces that have a
snapshot. Screenshots go to `test-artifacts/memsnap_*.png`."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest
from playwright.sync_api import Page, expect

from dashboard.format import format_bytes

if TYPE_CHECKING:
    from tests.browser.conftest import PageErrors, Server

pytestmark = [pytest.mark.browser, pytest.mark.integration]

DATA = Path(__file__).resolve().parents[1] / "data" / "memsnap"
PICKLE = DATA / "h200_memsnap.pickle"
TRACE = DATA / "h200_memsnap.pt.trace.json.gz"
EXPECTED = json.loads((DATA / "h200_memsnap.expected.json").read_text())
TIMEOUT_MS = 30_000
expect.set_options(timeout=TIMEOUT_MS)
CHARTS = ("timeline", "segments", "fragmentation", "phases")
AREA = "#traces-upload"
FILES = f"{AREA} .upload-files-input"


def _upload(server: Server, *paths: Path) -> str:
    """One upload of `paths` (several files become one trace); the trace id once ready."""
    files = [("file", (p.name, p.read_bytes())) for p in paths]
    r = httpx.post(f"{server.base_url}/api/v1/traces", files=files, timeout=60)
    assert r.status_code == 202, r.text
    tid = str(r.json()["id"])
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        trace = httpx.get(f"{server.base_url}/api/v1/traces/{tid}", timeout=10).json()
        if trace["status"] in ("ready", "failed"):
            assert trace["status"] == "ready", trace["error"]
            return tid
        time.sleep(0.2)
    pytest.fail(f"not parsed in 90 s:\n{server.log_tail()}")


def test_memory_snapshot_tab(
    module_server: Server, page: Page, page_errors: PageErrors, artifacts: Path
) -> None:
    base = module_server.base_url
    tid = _upload(module_server, TRACE, PICKLE)
    page.goto(f"{base}/traces/{tid}?tab=memsnap")
    kpis = page.locator("#trace-memsnap-kpis")
    expect(kpis).to_contain_text(format_bytes(EXPECTED["max_memory_allocated"]))
    expect(kpis).to_contain_text(format_bytes(EXPECTED["memory_reserved_at_dump"]))
    for chart in CHARTS:
        expect(page.locator(f"#trace-memsnap-{chart} .main-svg").first).to_be_attached()
    expect(page.locator("#trace-memsnap-timeline .scatterlayer .js-line").first).to_be_attached()
    segments = httpx.get(f"{base}/api/v1/traces/{tid}/memory-snapshot/segments").json()
    bars = page.locator("#trace-memsnap-segments .barlayer .point")
    blocks = sum(len(s["blocks"]) for s in segments["items"])
    expect(bars).to_have_count(blocks)
    expect(page.locator("#trace-memsnap-fragmentation .barlayer .point").first).to_be_attached()
    top = httpx.get(f"{base}/api/v1/traces/{tid}/memory-snapshot/stacks").json()["items"]
    stacks = page.locator("#trace-memsnap-stacks tbody tr")
    expect(stacks).to_have_count(len(top))
    expect(stacks.first).to_contain_text(format_bytes(top[0]["bytes"]))
    page.screenshot(path=artifacts / "memsnap_tab.png", full_page=True)
    for chart in CHARTS:
        page.locator(f"#trace-memsnap-{chart}").screenshot(path=artifacts / f"memsnap_{chart}.png")
    top_y = page.evaluate(
        "document.querySelector('#trace-memsnap-stacks').getBoundingClientRect().top"
        " + window.scrollY"
    )
    box = page.locator("#trace-memsnap-stacks").bounding_box()
    assert box is not None
    clip = {"x": box["x"], "y": top_y, "width": box["width"], "height": min(box["height"], 560)}
    page.screenshot(path=artifacts / "memsnap_stacks.png", clip=clip, full_page=True)

    page.locator("#trace-memsnap-at-link").click()
    expect(page).to_have_url(f"{base}/traces/{tid}?tab=memsnap&at=dump")
    dump = httpx.get(f"{base}/api/v1/traces/{tid}/memory-snapshot/segments?at=dump").json()
    expect(bars).to_have_count(sum(len(s["blocks"]) for s in dump["items"]))
    expect(page.locator("#trace-detail-tab-memsnap")).to_be_visible()
    assert page_errors.messages == []


def test_the_tab_shows_only_with_a_snapshot(module_server: Server, page: Page) -> None:
    base = module_server.base_url
    tid = _upload(module_server, TRACE)
    page.goto(f"{base}/traces/{tid}")
    expect(page.locator("#trace-detail-tab-overview")).to_be_visible()
    expect(page.locator("#trace-detail-tab-memsnap")).to_have_count(0)


def test_a_snapshot_uploaded_in_the_browser(
    module_server: Server, page: Page, page_errors: PageErrors, artifacts: Path
) -> None:
    """Alone, a snapshot is a trace; dropped with its profiler trace, the widget sends both
    in one request and the snapshot shows on that trace."""
    base = module_server.base_url
    page.goto(base + "/")
    page.set_input_files(FILES, PICKLE)
    page.click(f"{AREA} .upload-send")
    result = page.locator(f"{AREA} .upload-result")
    expect(result).to_have_attribute("data-status", "ready", timeout=60_000)
    expect(result).to_contain_text("torch_memory_snapshot")
    tid = str(result.get_attribute("data-trace-id"))
    page.goto(f"{base}/traces/{tid}?tab=memsnap")
    expect(page.locator("#trace-memsnap-kpis")).to_contain_text(
        format_bytes(EXPECTED["max_memory_allocated"])
    )
    phases = page.locator("#trace-memsnap-phases .barlayer .point")
    count = httpx.get(f"{base}/api/v1/traces/{tid}/memory-snapshot/phases").json()["count"]
    expect(phases).to_have_count(2 * count)  # start level and rise, per phase
    page.screenshot(path=artifacts / "memsnap_alone.png", full_page=True)
    page.goto(f"{base}/traces/{tid}?tab=memory")  # the profiler-style Memory tab reads it too
    expect(page.locator("#trace-memory-chart .scatterlayer .js-line").first).to_be_attached()
    page.goto(f"{base}/traces/{tid}")  # no kernels: the overview says so, and does not break
    expect(page.locator("#trace-detail-tab-memsnap")).to_be_visible()
    page.screenshot(path=artifacts / "memsnap_overview.png", full_page=True)

    page.goto(base + "/")
    page.set_input_files(FILES, [TRACE, PICKLE])
    expect(page.locator(f"{AREA} input[value=ranks]")).to_be_checked()
    send = page.locator(f"{AREA} .upload-send")
    expect(send).to_have_text("Upload as one trace with its memory snapshot")
    expect(page.locator(f"{AREA} .upload-name")).to_have_value(TRACE.name)
    page.screenshot(path=artifacts / "memsnap_upload_pair.png", full_page=True)
    send.click()
    expect(result).to_have_attribute("data-status", "ready", timeout=60_000)
    pair = str(result.get_attribute("data-trace-id"))
    trace = httpx.get(f"{base}/api/v1/traces/{pair}", timeout=10).json()
    assert trace["format"] == "torch_profiler"
    assert trace["meta"]["memory_snapshot"] == {"file": PICKLE.name}
    page.goto(f"{base}/traces/{pair}?tab=memsnap")
    expect(page.locator("#trace-memsnap-kpis")).to_contain_text(
        format_bytes(EXPECTED["max_memory_allocated"])
    )
    assert page_errors.messages == []
