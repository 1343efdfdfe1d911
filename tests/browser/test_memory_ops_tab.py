"""The Memory tab's by-op tables in headless Chromium, on the H200 `with_stack` trace.

The tables must show the API's rows (the numbers the API tests check against the raw file),
the link controls must change the view through the URL, and the peak must link to the
timeline around it. Screenshots go to `test-artifacts/memory_ops_*.png`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest
from playwright.sync_api import Page, expect

from dashboard.format import format_bytes
from tests.browser.conftest import upload_and_wait

if TYPE_CHECKING:
    from tests.browser.conftest import PageErrors, Server

pytestmark = [pytest.mark.browser, pytest.mark.integration]

REPO = Path(__file__).resolve().parents[2]
TRACE = REPO / "tests" / "data" / "torch" / "h200_ops_stack.pt.trace.json.gz"
TIMEOUT_MS = 30_000
expect.set_options(timeout=TIMEOUT_MS)
PEAK_NAMES = '#trace-memory-ops-peak-grid .ag-cell[col-id="name"]'
OPS_NAMES = '#trace-memory-ops-ops-grid .ag-cell[col-id="name"]'
OPS_STACKS = '#trace-memory-ops-ops-grid .ag-cell[col-id="stack"]'


def test_memory_by_op_on_a_real_trace(
    module_server: Server, page: Page, page_errors: PageErrors, artifacts: Path
) -> None:
    base = module_server.base_url
    tid = str(upload_and_wait(module_server, TRACE.read_bytes(), TRACE.name)["id"])
    api = f"{base}/api/v1/traces/{tid}/memory"
    peak = httpx.get(f"{api}/peak", timeout=30).json()
    ops = httpx.get(f"{api}/ops", timeout=30).json()

    page.goto(f"{base}/traces/{tid}?tab=memory")
    expect(page.locator("#trace-memory-chart .scatterlayer .js-line").first).to_be_attached()
    summary = page.locator(".memory-peak-summary")
    expect(summary).to_contain_text(format_bytes(peak["peak_allocated_bytes"]))
    expect(page.locator(PEAK_NAMES)).to_have_count(len(peak["items"]))
    expect(page.locator(PEAK_NAMES).first).to_have_text(peak["items"][0]["name"])
    expect(page.locator(OPS_NAMES)).to_have_count(len(ops["items"]))
    expect(page.locator(OPS_NAMES).first).to_have_text(ops["items"][0]["name"])
    page.screenshot(path=artifacts / "memory_ops_tab.png", full_page=True)

    link = page.locator("#memory-peak-timeline-link")
    href = link.get_attribute("href") or ""
    t = peak["peak_t_ns"]
    assert href.startswith(f"/traces/{tid}/timeline?start_ns=")
    lo, hi = (int(part.split("=")[1]) for part in href.split("?")[1].split("&"))
    assert lo < t < hi

    # Rows per op and Python stack, through the link control; then largest live at the peak first.
    page.locator("#trace-memory-ops-peak a", has_text="op and Python stack").click()
    expect(page).to_have_url(f"{base}/traces/{tid}?tab=memory&mgroup=stack")
    expect(page.locator("#trace-memory-ops-peak .chip-active").last).to_have_text(
        "op and Python stack"
    )
    expect(page.locator(OPS_STACKS).filter(has_text="\u2039").first).to_be_visible()
    page.locator("#trace-memory-ops-ops a", has_text="live at the peak").click()
    expect(page).to_have_url(f"{base}/traces/{tid}?tab=memory&mgroup=stack&msort=peak_bytes")
    expect(page.locator("#trace-memory-ops-ops .chip-active")).to_have_text("live at the peak")
    top = httpx.get(f"{api}/ops", params={"group": "stack", "sort": "peak_bytes"}).json()
    expect(page.locator(OPS_NAMES).first).to_have_text(top["items"][0]["name"])
    page.screenshot(path=artifacts / "memory_ops_stacks.png", full_page=True)
    page.locator("#trace-memory-ops").screenshot(path=artifacts / "memory_ops_tables.png")

    # The timeline opens on a window holding the peak.
    page.goto(f"{base}{href}")
    page.wait_for_function("window.perfdashTimeline && window.perfdashTimeline.ready")
    shown = page.evaluate("window.perfdashTimeline.visibleRange()")
    assert int(shown["startNs"]) <= t <= int(shown["endNs"])
    assert page_errors.messages == []
