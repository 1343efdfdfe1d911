"""The Ranges tab in headless Chromium on a real H200 nsys export (NVTX ranges, a CUDA graph).

`train_step.sqlite` holds 13 nvtx_sum rows (its `_nvtx_sum.csv`) and one CUDA graph replayed
3 times (tests/data/nsys/README.md). Screenshots go to `test-artifacts/ranges_*.png`.
"""

from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import upload_and_wait

if TYPE_CHECKING:
    from tests.browser.conftest import PageErrors, Server

pytestmark = [pytest.mark.browser, pytest.mark.integration]

NSYS = Path(__file__).resolve().parents[1] / "data" / "nsys"
TORCH = NSYS.parent / "torch"
TRACE = NSYS / "train_step.sqlite"
TIMEOUT_MS = 30_000
expect.set_options(timeout=TIMEOUT_MS)


def _instances(text: str) -> int:
    with (NSYS / "train_step_nvtx_sum.csv").open() as f:
        return next(int(r["Instances"]) for r in csv.DictReader(f) if r["Range"] == f":{text}")


def test_ranges_tab_on_an_h200_nsys_export(
    module_server: Server, page: Page, page_errors: PageErrors, artifacts: Path
) -> None:
    base = module_server.base_url
    tid = upload_and_wait(module_server, TRACE.read_bytes(), TRACE.name)["id"]
    page.goto(f"{base}/traces/{tid}?tab=ranges")
    rows = page.locator("#trace-ranges-grid .ag-center-cols-container .ag-row")
    expect(rows).to_have_count(13)
    boxes = page.locator("#trace-ranges-durations .boxlayer .points path")
    # the default chart: the repeated range with the most time, `forward`
    expect(page.locator("#trace-ranges-durations .gtitle")).to_contain_text("forward")
    expect(boxes).to_have_count(_instances("forward"))
    graphs = page.locator("#trace-ranges-graphs")
    expect(graphs).to_contain_text("1 graph, 3 cudaGraphLaunch calls")
    chart = page.locator("#trace-ranges-replays-chart .scatterlayer .points path")
    expect(chart).to_have_count(6)  # span and GPU time of 3 replays
    page.screenshot(path=artifacts / "ranges_nsys_train_step.png", full_page=True)

    cell = page.locator("#trace-ranges-grid .ag-cell[col-id='name']", has_text="optimizer")
    cell.first.click()
    expect(page).to_have_url(f"{base}/traces/{tid}?tab=ranges&range=optimizer")
    expect(page.locator("#trace-ranges-durations .gtitle")).to_contain_text("optimizer")
    expect(boxes).to_have_count(_instances("optimizer"))
    page.screenshot(path=artifacts / "ranges_selected.png", full_page=True)
    assert page_errors.messages == []


def test_ranges_tab_on_an_h200_torch_cuda_graph_trace(
    module_server: Server, page: Page, page_errors: PageErrors, artifacts: Path
) -> None:
    """record_function ranges (CPU and GPU side) and 4 replays of one graph, linked by
    correlation only (Kineto records no graph ids there)."""
    path = TORCH / "h200_cuda_graph.pt.trace.json.gz"
    events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    sides = {"user_annotation": "cpu", "gpu_user_annotation": "gpu"}
    names = {(e["name"], sides[e["cat"]]) for e in events if e.get("cat") in sides}
    tid = upload_and_wait(module_server, path.read_bytes(), path.name)["id"]
    page.goto(f"{module_server.base_url}/traces/{tid}?tab=ranges")
    rows = page.locator("#trace-ranges-grid .ag-center-cols-container .ag-row")
    expect(rows).to_have_count(len(names))
    expect(page.locator("#trace-ranges-grid")).to_contain_text("GPU")
    expect(page.locator("#trace-ranges-graphs")).to_contain_text("1 graph, 4 cudaGraphLaunch")
    chart = page.locator("#trace-ranges-replays-chart .scatterlayer .points path")
    expect(chart).to_have_count(8)  # span and GPU time of 4 replays
    page.screenshot(path=artifacts / "ranges_torch_cuda_graph.png", full_page=True)
    assert page_errors.messages == []
