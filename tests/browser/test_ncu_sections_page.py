"""The Nsight Compute sections card on the Roofline tab, in headless Chromium, with real H200
ncu runs (tests/data/ncu): a `--set full` details page (rules, sections) and its raw page
(warp stalls, memory chart bytes). Screenshots in `test-artifacts/`."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import upload_and_wait

if TYPE_CHECKING:
    from tests.browser.conftest import PageErrors, Server

pytestmark = [pytest.mark.browser, pytest.mark.integration]

NCU = Path(__file__).resolve().parents[1] / "data" / "ncu"
TIMEOUT_MS = 30_000


def _rows(path: Path) -> list[dict[str, str]]:
    lines = path.read_text().splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.startswith('"ID",'))
    return list(csv.DictReader(lines[start:]))


def _open(server: Server, page: Page, name: str, query: str = "") -> str:
    tid = str(upload_and_wait(server, (NCU / name).read_bytes(), name)["id"])
    page.goto(f"{server.base_url}/traces/{tid}?tab=roofline{query}")
    expect(page.locator("#trace-roofline-chart")).to_be_attached(timeout=TIMEOUT_MS)
    return tid


def test_full_set_details_page_sections_and_rules(
    module_server: Server, page: Page, page_errors: PageErrors, artifacts: Path
) -> None:
    rows = _rows(NCU / "h200_full_details.csv")
    names = {r["ID"]: r["Kernel Name"] for r in rows}
    speedups = [float(r["Estimated Speedup"]) for r in rows
                if r["ID"] == "0" and r["Estimated Speedup"]]  # fmt: skip
    tid = _open(module_server, page, "h200_full_details.csv")
    card = page.locator("#trace-ncu")
    expect(card.locator("#trace-ncu-kernel")).to_have_text(names["0"], timeout=TIMEOUT_MS)
    expect(card.locator("#trace-ncu-launches li")).to_have_count(len(names))
    expect(card.locator("#trace-ncu-sol .bars .point path")).to_have_count(5)
    expect(card.locator("#trace-ncu-occupancy .bars .point path")).to_have_count(2)
    expect(card.locator("#trace-ncu-limits")).to_contain_text("Registers ◀ limiter")
    expect(card.locator("#trace-ncu-rules")).to_contain_text(f"est. speedup {max(speedups):.1f}%")
    expect(card.locator("details.ncu-section")).to_have_count(len({
        r["Section Name"] for r in rows if r["ID"] == "0" and r["Metric Name"]
    }))  # fmt: skip
    card.locator("details.ncu-section summary").filter(has_text="Warp State").click()
    page.screenshot(path=artifacts / "ncu_sections_full_details.png", full_page=True)

    card.locator("#trace-ncu-launches li").nth(1).locator("a").click()
    expect(page).to_have_url(
        f"{module_server.base_url}/traces/{tid}?tab=roofline&ncu=1", timeout=TIMEOUT_MS
    )
    expect(page.locator("#trace-ncu-kernel")).to_have_text(names["1"], timeout=TIMEOUT_MS)
    assert page_errors.messages == []


def test_full_set_raw_page_stalls_and_memory(
    module_server: Server, page: Page, page_errors: PageErrors, artifacts: Path
) -> None:
    rows = _rows(NCU / "h200_full_raw.csv")[1:]  # past the units row
    tid = _open(module_server, page, "h200_full_raw.csv", "&ncu=0")
    card = page.locator("#trace-ncu")
    expect(card.locator("#trace-ncu-stalls .bars .point path")).to_have_count(15)
    expect(card).to_contain_text("cycles per issued instruction")
    expect(card.locator("#trace-ncu-memory")).to_contain_text("L1/TEX → L2")
    expect(card).to_contain_text("only on the details page")
    page.screenshot(path=artifacts / "ncu_sections_full_raw.png", full_page=True)

    # a click on the roofline's smallest-intensity point (the add, launch 1) selects it
    points = page.locator("#trace-roofline-chart .scatterlayer .points path")
    page.locator("#trace-roofline-chart").scroll_into_view_if_needed()
    boxes = [points.nth(i).bounding_box() for i in range(points.count())]
    box = min((b for b in boxes if b), key=lambda b: b["x"])
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)  # Plotly picks the point under the hover, then the click
    page.mouse.click(x, y)
    expect(page).to_have_url(
        f"{module_server.base_url}/traces/{tid}?tab=roofline&ncu=1", timeout=TIMEOUT_MS
    )
    expect(page.locator("#trace-ncu-kernel")).to_have_text(rows[1]["Kernel Name"])
    assert page_errors.messages == []
