"""The timeline page as a user drives it: open, zoom twice, click a kernel, read its launch.

Runs the real server (API, dashboard, worker) and headless Chromium on a real H200
trace; screenshots go to `test-artifacts/`.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest
from playwright.sync_api import Page, Response, expect

from dashboard.components.timeline_panels import around

if TYPE_CHECKING:
    from tests.browser.conftest import PageErrors, Server

pytestmark = [pytest.mark.browser, pytest.mark.integration]

REPO = Path(__file__).resolve().parents[2]
TRACE = REPO / "tests" / "data" / "torch" / "h200_gpt_small.pt.trace.json.gz"
GRAPH = "#timeline-graph"
STATUS = "#timeline-status"


def _ready_trace(server: Server) -> str:
    with TRACE.open("rb") as f:
        accepted = httpx.post(f"{server.base_url}/api/v1/traces", files={"file": f}, timeout=60)
    trace_id: str = accepted.json()["id"]
    for _ in range(240):
        status = httpx.get(f"{server.base_url}/api/v1/traces/{trace_id}", timeout=10).json()
        if status["status"] == "ready":
            return trace_id
        assert status["status"] != "failed", status["error"]
        time.sleep(0.5)
    pytest.fail(f"trace not ready:\n{server.log_tail()}")


def _zoom(page: Page, lo: float, hi: float) -> None:
    """Drag-select the fraction [lo, hi] of the plot's width, as a user zooms."""
    box = page.locator(f"{GRAPH} .nsewdrag").first.bounding_box()
    assert box is not None
    y = box["y"] + box["height"] / 2
    before = page.locator(STATUS).inner_text()
    page.mouse.move(box["x"] + box["width"] * lo, y)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * (lo + hi) / 2, y, steps=4)
    page.mouse.move(box["x"] + box["width"] * hi, y, steps=4)
    page.mouse.up()
    expect(page.locator(STATUS)).not_to_have_text(before, timeout=15_000)


def _click_widest_kernel(page: Page) -> None:
    """Click the middle of the widest compute-kernel bar in view."""
    bars = page.locator(f"{GRAPH} .barlayer .trace").first.locator(".point path")
    plot = page.locator(f"{GRAPH} .nsewdrag").first.bounding_box()
    assert plot is not None
    best = None
    for i in range(min(bars.count(), 400)):
        box = bars.nth(i).bounding_box()
        inside = box and plot["x"] < box["x"] + box["width"] / 2 < plot["x"] + plot["width"]
        if box and inside and (best is None or box["width"] > best["width"]):
            best = box
    assert best is not None, "no kernel bar in view"
    page.mouse.click(best["x"] + best["width"] / 2, best["y"] + best["height"] / 2)


def test_zoom_twice_then_click_a_kernel_shows_its_cpu_launch(
    perfdash_server: Server, page: Page, page_errors: PageErrors, artifacts: Path
) -> None:
    trace_id = _ready_trace(perfdash_server)
    page.goto(f"{perfdash_server.base_url}/traces/{trace_id}/timeline")
    expect(page.locator(f"{GRAPH} .barlayer .point path").first).to_be_attached(timeout=30_000)
    expect(page.locator(STATUS)).to_contain_text("busy blocks")
    expect(page.locator(f"{GRAPH} .ytick text").first).to_contain_text("GPU 0")
    page.screenshot(path=artifacts / "timeline_full.png", full_page=True)

    _zoom(page, 0.40, 0.50)
    page.screenshot(path=artifacts / "timeline_zoom1.png", full_page=True)
    _zoom(page, 0.45, 0.55)
    expect(page.locator(STATUS)).to_contain_text("individual events")
    assert "start_ns=" in page.url and "end_ns=" in page.url
    page.screenshot(path=artifacts / "timeline_zoom2.png", full_page=True)

    _click_widest_kernel(page)
    detail = page.locator("#timeline-detail")
    expect(detail.locator(".timeline-detail-name")).not_to_be_empty(timeout=15_000)
    expect(detail).to_contain_text("CPU launch")
    expect(detail).to_contain_text("LaunchKernel")
    expect(detail).to_contain_text("from CPU op")
    expect(detail).to_contain_text("kernel stats")
    page.screenshot(path=artifacts / "timeline_detail.png", full_page=True)

    page.fill("#timeline-search", "gemm")
    page.press("#timeline-search", "Enter")
    expect(page.locator("#timeline-search-results")).to_contain_text("gemm", timeout=15_000)
    page.get_by_role("button", name="Reset zoom").click()
    expect(page.locator(STATUS)).to_contain_text("busy blocks", timeout=15_000)

    # Collapse the CPU-thread group: its lanes leave the plot, the GPU lanes stay.
    labels = page.locator(f"{GRAPH} .ytick text")
    cpu_lanes = labels.filter(has_text=re.compile(r"thread \d+$"))
    expect(cpu_lanes.first).to_be_attached()
    page.get_by_label("CPU threads").uncheck()
    expect(cpu_lanes).to_have_count(0, timeout=15_000)
    expect(labels.filter(has_text=re.compile(r"^GPU 0")).first).to_be_attached()
    page.screenshot(path=artifacts / "timeline_cpu_collapsed.png", full_page=True)
    page.get_by_label("CPU threads").check()
    expect(cpu_lanes.first).to_be_attached(timeout=15_000)
    assert page_errors.messages == []


def _update_for(prop: str) -> Callable[[Response], bool]:
    """Matches the answer to a callback request that `prop` (an ID or property) triggered."""

    def matches(response: Response) -> bool:
        body = response.request.post_data if "_dash-update-component" in response.url else None
        return prop in str(json.loads(body or "{}").get("changedPropIds"))

    return matches


def _expect_window(page: Page, expected: tuple[int, int]) -> None:
    """Wait until the URL shows `expected`, to the 256 ns a JavaScript number keeps of
    epoch nanoseconds."""
    deadline = time.monotonic() + 15
    shown: tuple[int, ...] = ()
    while time.monotonic() < deadline:
        found = re.search(r"start_ns=(\d+)&end_ns=(\d+)", page.url)
        shown = tuple(int(v) for v in found.groups()) if found else ()
        if shown and all(abs(a - b) <= 1_000 for a, b in zip(shown, expected, strict=True)):
            return
        page.wait_for_timeout(100)
    pytest.fail(f"the URL shows the window {shown}, not {expected}")


def test_a_gap_and_a_search_match_zoom_to_themselves(
    perfdash_server: Server, page: Page, page_errors: PageErrors, artifacts: Path
) -> None:
    """The pattern-matched buttons of the window callback: a gap row, then a search match.
    The search click waits for the answer to the request the new match buttons make by
    themselves first: Dash drops an answer once a later request of the same callback is out.
    Plotly's autosize no longer reaches the server (the page filters relayouts to zooms)."""
    trace_id = _ready_trace(perfdash_server)
    api = f"{perfdash_server.base_url}/api/v1/traces/{trace_id}"
    gaps = httpx.get(f"{api}/timeline/gaps", params={"min_ns": 100_000, "limit": 20}).json()
    found = httpx.get(f"{api}/timeline/search", params={"q": "reduce_kernel"}).json()
    page.goto(f"{perfdash_server.base_url}/traces/{trace_id}/timeline")
    expect(page.locator(f"{GRAPH} .barlayer .point path").first).to_be_attached(timeout=30_000)

    page.locator(".timeline-gaps button").first.click()
    gap = gaps["items"][0]
    _expect_window(page, around(gap["start_ns"], gap["end_ns"], 2.0))
    page.screenshot(path=artifacts / "timeline_gap.png", full_page=True)

    with page.expect_response(_update_for("timeline-match"), timeout=15_000):
        page.fill("#timeline-search", "reduce_kernel")
        page.press("#timeline-search", "Enter")
    page.locator("#timeline-search-results button").first.click()
    match = found["matches"][0]
    _expect_window(page, around(match["start_ns"], match["end_ns"], 5.0))
    page.screenshot(path=artifacts / "timeline_match.png", full_page=True)
    assert page_errors.messages == []
