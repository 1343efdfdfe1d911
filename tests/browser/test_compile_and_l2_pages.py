"""The Compile tab (torch.compile phases) and the memory hierarchy of the Nsight Compute card
and roofline hover, in headless Chromium, with the real H200 files (issue #26, items 2 and 4).
Screenshots in `test-artifacts/`."""

from __future__ import annotations

import csv
import gzip
import json
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import upload_and_wait

if TYPE_CHECKING:
    from tests.browser.conftest import PageErrors, Server

pytestmark = [pytest.mark.browser, pytest.mark.integration]

DATA = Path(__file__).resolve().parents[1] / "data"
TIMEOUT_MS = 30_000
SUFFIX = " (dynamo_timed)"


def _open(server: Server, page: Page, path: Path, query: str) -> str:
    tid = str(upload_and_wait(server, path.read_bytes(), path.name)["id"])
    page.goto(f"{server.base_url}/traces/{tid}?{query}")
    return tid


def test_compile_tab_with_phases_and_recompiles(
    module_server: Server, page: Page, page_errors: PageErrors, artifacts: Path
) -> None:
    path = DATA / "torch" / "h200_compile.pt.trace.json.gz"
    with gzip.open(path) as f:
        events = json.load(f)["traceEvents"]
    totals: Counter[str] = Counter()
    for e in events:
        if e.get("ph") == "X" and e["name"].endswith(SUFFIX):
            totals[e["name"].removesuffix(SUFFIX)] += e["dur"]
    _open(module_server, page, path, "tab=compile")
    card = page.locator("#trace-compile")
    rows = card.locator("#trace-compile-phases tbody tr")
    expect(rows).to_have_count(10, timeout=TIMEOUT_MS)
    expect(rows.first.locator("td").first).to_have_text(totals.most_common(1)[0][0])
    expect(card.locator("#trace-compile-compiles tbody tr")).to_have_count(4)
    expect(card.locator("#trace-compile-compiles")).to_contain_text("recompile")
    expect(card.locator("#trace-compile-kpis")).to_contain_text("Recompiles")
    expect(card.locator("#trace-compile-phases-chart .bars .point path")).to_have_count(20)
    expect(page.locator("#trace-detail-tab-compile")).to_be_visible()
    card.screenshot(path=artifacts / "compile_tab.png")
    assert page_errors.messages == []


def test_compile_tab_hidden_without_compile_ranges(
    module_server: Server, page: Page, page_errors: PageErrors
) -> None:
    _open(module_server, page, DATA / "torch" / "h200_train_step.pt.trace.json.gz", "tab=kernels")
    expect(page.locator("#trace-detail-tab-kernels")).to_be_visible(timeout=TIMEOUT_MS)
    expect(page.locator("#trace-detail-tab-compile")).to_have_count(0)
    assert page_errors.messages == []


def test_ncu_memory_hierarchy_and_roofline_hover(
    module_server: Server, page: Page, page_errors: PageErrors, artifacts: Path
) -> None:
    path = DATA / "ncu" / "h200_full_raw.csv"
    lines = path.read_text().splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.startswith('"ID",'))
    gemm = list(csv.DictReader(lines[start:]))[1]  # past the units row
    _open(module_server, page, path, "tab=roofline&ncu=0")
    card = page.locator("#trace-ncu")
    hits = card.locator("#trace-ncu-hits")
    l2_hit = float(gemm["lts__t_sector_hit_rate.pct"])
    expect(hits).to_contain_text(f"L2 hit rate {l2_hit:.1f}%", timeout=TIMEOUT_MS)
    expect(card.locator("#trace-ncu-hierarchy")).to_contain_text("L2 ◀ bound")
    card.locator("#trace-ncu-hierarchy").scroll_into_view_if_needed()
    card.screenshot(path=artifacts / "ncu_l2_sections.png")

    chart = page.locator("#trace-roofline-chart")
    chart.scroll_into_view_if_needed()
    points = chart.locator(".scatterlayer .points path")
    boxes = [b for i in range(points.count()) if (b := points.nth(i).bounding_box())]
    box = max(boxes, key=lambda b: b["x"])  # the GEMM: the highest intensity
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    hover = chart.locator(".hoverlayer")
    expect(hover).to_contain_text(f"L2 hit: {l2_hit:.1f}%", timeout=TIMEOUT_MS)
    expect(hover).to_contain_text("nearest memory roof: L2")
    chart.screenshot(path=artifacts / "ncu_l2_roofline_hover.png")
    assert page_errors.messages == []
