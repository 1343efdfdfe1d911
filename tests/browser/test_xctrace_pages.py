"""An Instruments (xctrace) Metal System Trace export in the browser: the overview, the
kernels tab and the timeline render it, with numbers from an ElementTree reading."""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import TYPE_CHECKING

from playwright.sync_api import Page, expect

from tests.browser.conftest import upload_and_wait
from tests.ingest.xctrace_reading import kernel_totals, label_name, number, read_tables

if TYPE_CHECKING:
    from tests.browser.conftest import PageErrors, Server

TRACE = Path(__file__).resolve().parents[1] / "data" / "xctrace" / "metal_system_trace.xml"
HOOK = "window.perfdashTimeline"
FILE_INPUT = "#traces-upload .upload-files-input"
SEND = "#traces-upload .upload-send"


def test_xctrace_trace_pages(
    module_server: Server, page: Page, page_errors: PageErrors, artifacts: Path
) -> None:
    trace = upload_and_wait(module_server, TRACE.read_bytes(), TRACE.name)
    base = f"{module_server.base_url}/traces/{trace['id']}"
    names = kernel_totals(TRACE)
    top = max(names, key=lambda n: names[n][1])

    page.goto(base)
    bars = page.locator("#trace-detail-kernels-chart .bars .point path")
    expect(bars).to_have_count(len(names), timeout=30_000)
    expect(page.locator("#trace-detail-kpis")).to_contain_text("GPU utilization")
    page.screenshot(path=artifacts / "xctrace_overview.png", full_page=True)

    page.goto(f"{base}?tab=kernels")
    expect(page.locator("#trace-kernels-table")).to_contain_text(top, timeout=30_000)
    page.screenshot(path=artifacts / "xctrace_kernels.png", full_page=True)

    page.goto(f"{base}/timeline")
    page.wait_for_function(f"{HOOK} && {HOOK}.ready", timeout=30_000)
    expect(page.locator("body")).to_contain_text("Compute channel", timeout=30_000)
    page.screenshot(path=artifacts / "xctrace_timeline.png", full_page=True)

    # The longest Compute interval, selected, is launched by its command buffer's commit.
    tables = read_tables(TRACE)
    commits = {
        number(r["cmdbuffer-id"]): number(r["start"])
        for r in tables["metal-application-command-buffer-submissions"]
    }
    compute = [
        r for r in tables["metal-gpu-intervals"]
        if r["channel-name"].text == "Compute" and number(r["cmdbuffer-id"]) in commits
    ]  # fmt: skip
    widest = max(compute, key=lambda r: number(r["duration"]))
    start, commit = number(widest["start"]), commits[number(widest["cmdbuffer-id"])]
    view = page.evaluate(f"{HOOK}.visibleRange()")
    t0 = int(view["traceStartNs"])
    page.evaluate(
        f"([s, e]) => {HOOK}.setRange(s, e)",
        [str(commit - 50_000), str(start + number(widest["duration"]) + 50_000)],
    )
    drawn = page.evaluate(f"{HOOK}.slicesInView()")
    name = label_name(widest["event-label"])
    ids = [s["id"] for s in drawn if t0 + round(s["start"]) == start and s["name"] == name]
    assert len(ids) == 1, drawn[:5]
    selected = page.evaluate(f"id => {HOOK}.select(id)", ids[0])
    assert selected["flows"] >= 1, selected
    details = page.locator(".pdt-details")
    expect(details.locator("tr", has_text="Launched by")).to_contain_text("MTLCommandBuffer commit")
    page.screenshot(path=artifacts / "xctrace_flow.png", full_page=True)
    assert page_errors.messages == []


def test_xctrace_uploads_through_the_page(
    module_server: Server, page: Page, page_errors: PageErrors, artifacts: Path, tmp_path: Path
) -> None:
    """The zip of one export per table, and a refused table, uploaded as a user does."""
    archive = TRACE.with_name("metal_tables.zip")
    with zipfile.ZipFile(archive) as z:
        z.extract("run1/metal-gpu-intervals.xml", tmp_path)
    names = kernel_totals(tmp_path / "run1" / "metal-gpu-intervals.xml")
    refused = tmp_path / "time_profile.xml"
    refused.write_text(
        '<?xml version="1.0"?>\n<trace-query-result><node><schema name="time-profile">'
        "<col><mnemonic>time</mnemonic></col></schema></node></trace-query-result>\n"
    )
    page.goto(module_server.base_url + "/")
    page.set_input_files(FILE_INPUT, archive)
    page.click(SEND)
    ready = page.locator('#traces-table tr[data-status="ready"]', has_text=archive.name)
    expect(ready).to_have_count(1, timeout=60_000)
    expect(ready).to_contain_text("xctrace_xml")
    page.goto(module_server.base_url + "/")  # a fresh upload area
    page.set_input_files(FILE_INPUT, refused)
    page.click(SEND)
    failed = page.locator('#traces-table tr[data-status="failed"]', has_text=refused.name)
    expect(failed).to_have_count(1, timeout=60_000)
    page.screenshot(path=artifacts / "xctrace_uploads.png", full_page=True)
    failed_id = failed.get_attribute("data-trace-id")

    ready.get_by_role("link", name="Open →").click()
    bars = page.locator("#trace-detail-kernels-chart .bars .point path")
    expect(bars).to_have_count(len(names), timeout=30_000)
    page.goto(f"{module_server.base_url}/traces/{failed_id}")
    expect(page.locator("body")).to_contain_text("'time-profile' is not one perfdash reads")
    page.screenshot(path=artifacts / "xctrace_refused.png", full_page=True)
    assert page_errors.messages == []
