"""The upload flow as a user clicks it: upload, watch it turn ready, read the kernel chart.

Runs the real server (API, dashboard, Celery worker) and headless Chromium; screenshots
go to `test-artifacts/` so a person can check how the pages look.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest
from playwright.sync_api import FilePayload, Page, expect

from dashboard.format import shorten_kernel_name

if TYPE_CHECKING:
    from tests.browser.conftest import PageErrors, Server

pytestmark = [pytest.mark.browser, pytest.mark.integration]

REPO = Path(__file__).resolve().parents[2]
TRACE = REPO / "tests" / "data" / "torch" / "h200_train_step.pt.trace.json.gz"
KERNEL_SUMS = TRACE.with_name("h200_train_step.kernel_sums.json")
FILE_INPUT = "#traces-upload .upload-files-input"
SEND = "#traces-upload .upload-send"
READY_TIMEOUT_MS = 60_000


def _top_kernel_name() -> str:
    """The largest kernel by total time, from the fixture's independent answer."""
    kernels = json.loads(KERNEL_SUMS.read_text())["kernels"]
    name: str = max(kernels, key=lambda k: int(k["total_ns"]))["name"]
    return name


def test_upload_trace_then_view_its_kernels(
    perfdash_server: Server, page: Page, page_errors: PageErrors, artifacts: Path
) -> None:
    page.goto(perfdash_server.base_url + "/")
    expect(page.locator("#traces-table")).to_contain_text("No traces yet")

    page.set_input_files(FILE_INPUT, TRACE)
    expect(page.locator("#traces-upload .upload-name")).to_have_value(TRACE.name)
    page.click(SEND)
    status = page.locator("#traces-upload .upload-result")
    expect(status).to_contain_text(TRACE.name, timeout=30_000)

    ready_row = page.locator('#traces-table tr[data-status="ready"]')
    expect(ready_row).to_have_count(1, timeout=READY_TIMEOUT_MS)
    expect(ready_row).to_contain_text(TRACE.name)
    expect(ready_row).to_contain_text("torch_profiler")
    expect(ready_row.locator(".badge")).to_have_text("ready")
    page.screenshot(path=artifacts / "traces_page.png", full_page=True)

    trace_id = ready_row.get_attribute("data-trace-id")
    ready_row.get_by_role("link", name="Open →").click()
    expect(page).to_have_url(f"{perfdash_server.base_url}/traces/{trace_id}")
    bars = page.locator("#trace-detail-kernels-chart .js-plotly-plot .bars .point path")
    expect(bars).to_have_count(10, timeout=30_000)

    full = _top_kernel_name()
    short = shorten_kernel_name(full)
    chart_ticks = page.locator("#trace-detail-kernels-chart .ytick text")
    expect(chart_ticks.first).to_have_text(short)
    first_cell = page.locator("#trace-detail-kernels-table tbody tr").first.locator(".kernel-name")
    expect(first_cell).to_have_text(short)
    expect(first_cell).to_have_attribute("title", full)
    expect(page.locator("#trace-detail-facts")).to_contain_text("NVIDIA H200")
    page.screenshot(path=artifacts / "trace_detail.png", full_page=True)

    # The second kernel's name is C++ with templates: its `<` must survive as text.
    bars.nth(1).hover(force=True)  # plotly's drag layer sits on top and takes the events
    hover = page.locator(".hoverlayer .hovertext")
    expect(hover).to_contain_text("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<")
    expect(hover).to_contain_text("count: 6")
    page.screenshot(path=artifacts / "trace_detail_hover.png")
    assert page_errors.messages == []


def test_empty_upload_shows_the_api_error_and_adds_no_trace(
    perfdash_server: Server, page: Page, page_errors: PageErrors, artifacts: Path
) -> None:
    page.goto(perfdash_server.base_url + "/")
    expect(page.locator("#traces-table")).to_contain_text("No traces yet")

    empty = FilePayload(name="empty.json", mimeType="application/json", buffer=b"")
    page.set_input_files(FILE_INPUT, files=[empty])
    page.click(SEND)

    row = page.locator('#traces-upload .upload-file[data-file="empty.json"]')
    expect(row.locator(".upload-error")).to_contain_text(
        "the uploaded file is empty", timeout=30_000
    )
    # Let the table poll at least once more, so a stray row would have appeared.
    page.wait_for_timeout(2_000)
    expect(page.locator("#traces-table tr[data-trace-id]")).to_have_count(0)
    listing = httpx.get(f"{perfdash_server.base_url}/api/v1/traces", timeout=10).json()
    assert listing["count"] == 0
    page.screenshot(path=artifacts / "upload_error.png", full_page=True)
    assert page_errors.messages == []


def test_trace_page_polls_until_the_trace_is_ready(
    server_without_worker: Server,
    start_worker: Callable[[Server], None],
    page: Page,
    page_errors: PageErrors,
    artifacts: Path,
) -> None:
    base = server_without_worker.base_url
    with TRACE.open("rb") as f:
        accepted = httpx.post(f"{base}/api/v1/traces", files={"file": f}, timeout=30).json()
    page.goto(f"{base}/traces/{accepted['id']}")
    expect(page.locator("#trace-detail-status")).to_contain_text("queued")
    expect(page.locator("#trace-detail-title .badge")).to_have_text("queued")
    page.screenshot(path=artifacts / "trace_detail_queued.png", full_page=True)

    start_worker(server_without_worker)
    bars = page.locator("#trace-detail-kernels-chart .js-plotly-plot .bars .point path")
    expect(bars).to_have_count(10, timeout=READY_TIMEOUT_MS)
    expect(page.locator("#trace-detail-title .badge")).to_have_text("ready")
    expect(page.locator("#trace-detail-status")).to_have_count(0)
    assert page_errors.messages == []
