"""Steps as a user meets them, on the H200 fixtures without ProfilerStep: the Overview's step
time says which marker it comes from, the Timeline's "Jump to step" lists the steps, and a
marker chosen on the page is kept for the trace. Screenshots go to `test-artifacts/`."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import upload_and_wait

if TYPE_CHECKING:
    from tests.browser.conftest import PageErrors, Server

pytestmark = [pytest.mark.browser, pytest.mark.integration]

DATA = Path(__file__).resolve().parents[1] / "data"
KPIS = "#trace-detail-kpis"
NOTE = "#timeline-marker-note"
OPEN_MENU = ".dash-dropdown-content"  # an open dcc.Dropdown's menu (Dash 4)


def _options(page: Page, dropdown: str) -> list[str]:
    """Open a dropdown and read its options' labels."""
    page.locator(dropdown).click()
    options = page.locator(OPEN_MENU).get_by_role("option")
    expect(options.first).to_be_visible(timeout=10_000)
    return [t.strip() for t in options.all_inner_texts()]


def test_nvtx_steps_on_the_overview_and_the_step_picker(
    module_server: Server, page: Page, page_errors: PageErrors, artifacts: Path
) -> None:
    trace = upload_and_wait(
        module_server, (DATA / "nsys/nvtx_steps.sqlite").read_bytes(), "n.sqlite"
    )
    page.goto(f"{module_server.base_url}/traces/{trace['id']}")
    tile = page.locator(KPIS).locator(".kpi", has_text="Step time")
    expect(tile).to_contain_text(
        "Steps from train_step_N, 5 ranges (found automatically", timeout=30_000
    )
    expect(tile.locator(".kpi-value")).to_have_text(re.compile(r"^2\.\d+ ms / 3\.\d+ ms$"))
    page.screenshot(path=artifacts / "steps_nvtx_overview.png", full_page=True)

    page.goto(f"{module_server.base_url}/traces/{trace['id']}/timeline")
    expect(page.locator(NOTE)).to_contain_text("Steps from train_step_N", timeout=30_000)
    labels = _options(page, "#timeline-step")
    assert [label.split(" · ")[0] for label in labels] == [f"step {n}" for n in range(5)]
    page.screenshot(path=artifacts / "steps_nvtx_picker.png", full_page=True)
    page.wait_for_function("window.perfdashTimeline && window.perfdashTimeline.ready")
    steps = httpx.get(f"{module_server.base_url}/api/v1/traces/{trace['id']}/timeline/steps")
    step = steps.json()["items"][2]
    page.locator(OPEN_MENU).get_by_role("option").nth(2).click()
    # The canvas moves to the step (to the ~256 ns a JSON number keeps of epoch ns).
    page.wait_for_function(
        """([s, e]) => { const r = window.perfdashTimeline.visibleRange();
            return Math.abs(Number(BigInt(r.startNs) - BigInt(s))) < 1000
                && Math.abs(Number(BigInt(r.endNs) - BigInt(e))) < 1000; }""",
        arg=[str(step["start_ns"]), str(step["end_ns"])],
        timeout=15_000,
    )
    assert page_errors.messages == []


def test_a_marker_chosen_on_the_page_is_kept(
    module_server: Server, page: Page, page_errors: PageErrors, artifacts: Path
) -> None:
    data = (DATA / "torch/h200_compiled_steps.pt.trace.json.gz").read_bytes()
    trace = upload_and_wait(module_server, data, "compiled.pt.trace.json.gz")
    timeline = f"{module_server.base_url}/traces/{trace['id']}/timeline"
    page.goto(timeline)
    expect(page.locator(NOTE)).to_contain_text("Steps from compiled_step, 4 ranges", timeout=30_000)
    labels = _options(page, "#timeline-marker")
    assert labels[0].startswith("Automatic") and labels[1] == "compiled_step (4 ranges)"
    page.get_by_role("option", name=re.compile(r"^Optimizer\.step#AdamW\.step")).click()
    expect(page.locator(NOTE)).to_contain_text(
        "Steps from Optimizer.step#AdamW.step, 4 ranges (chosen for this trace)", timeout=15_000
    )
    page.screenshot(path=artifacts / "steps_marker_chosen.png", full_page=True)

    page.goto(f"{module_server.base_url}/traces/{trace['id']}")  # kept: the summary says so
    tile = page.locator(KPIS).locator(".kpi", has_text="Step time")
    expect(tile).to_contain_text(
        "Optimizer.step#AdamW.step, 4 ranges (chosen for this trace)", timeout=30_000
    )
    page.goto(timeline)
    expect(page.locator(NOTE)).to_contain_text("chosen for this trace", timeout=30_000)
    assert page_errors.messages == []


def test_a_trace_without_steps_says_so(
    module_server: Server, page: Page, page_errors: PageErrors, artifacts: Path
) -> None:
    data = (DATA / "rocprof/4242_results.db").read_bytes()
    trace = upload_and_wait(module_server, data, "4242_results.db")
    page.goto(f"{module_server.base_url}/traces/{trace['id']}")
    tile = page.locator(KPIS).locator(".kpi", has_text="Step time")
    expect(tile).to_contain_text("No step marker found", timeout=30_000)
    page.screenshot(path=artifacts / "steps_none_overview.png", full_page=True)
    assert page_errors.messages == []
