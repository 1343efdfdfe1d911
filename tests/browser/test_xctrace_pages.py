"""An Instruments (xctrace) Metal System Trace export in the browser: the overview, the
kernels tab and the timeline render it, with numbers from an ElementTree reading."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from playwright.sync_api import Page, expect

from tests.browser.conftest import upload_and_wait
from tests.ingest.xctrace_reading import kernel_totals, label_name, number, read_tables

if TYPE_CHECKING:
    from tests.browser.conftest import PageErrors, Server

TRACE = Path(__file__).resolve().parents[1] / "data" / "xctrace" / "metal_system_trace.xml"
HOOK = "window.perfdashTimeline"


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
