"""The Nsight Compute sections card on the Roofline tab, in headless Chromium, with the
details page of a real H200 ncu run (tests/data/ncu); screenshots in `test-artifacts/`."""

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
DETAILS = NCU / "gemm_elementwise_details.csv"
TIMEOUT_MS = 30_000


def _names_by_id(path: Path) -> dict[str, str]:
    with path.open(newline="") as f:
        rows = csv.DictReader(line for line in f if not line.startswith("=="))
        return {r["ID"]: r["Kernel Name"] for r in rows}


def test_sections_card_next_to_the_roofline(
    module_server: Server, page: Page, page_errors: PageErrors, artifacts: Path
) -> None:
    names = _names_by_id(DETAILS)
    tid = upload_and_wait(module_server, DETAILS.read_bytes(), DETAILS.name)["id"]
    base = module_server.base_url
    page.goto(f"{base}/traces/{tid}?tab=roofline")
    expect(page.locator("#trace-roofline-chart .scatterlayer .points path").first).to_be_attached(
        timeout=TIMEOUT_MS
    )
    card = page.locator("#trace-ncu")
    expect(card.locator("#trace-ncu-kernel")).to_have_text(names["0"], timeout=TIMEOUT_MS)
    expect(card.locator("#trace-ncu-launches li")).to_have_count(len(names))
    expect(card.locator("#trace-ncu-sol .bars .point path")).to_have_count(5)
    expect(card.locator("#trace-ncu-occupancy .bars .point path")).to_have_count(2)
    expect(card.locator("#trace-ncu-limits tbody tr")).to_have_count(5)
    expect(card.locator("#trace-ncu-limits")).to_contain_text("Registers ◀ limiter")
    expect(card.locator("#trace-ncu-memory")).to_contain_text("DRAM")
    expect(card.locator("#trace-ncu-rules")).to_contain_text("est. speedup 81.2%")
    expect(card).to_contain_text("Roofline point: tensor")
    page.screenshot(path=artifacts / "ncu_sections_gemm.png", full_page=True)

    card.locator("#trace-ncu-launches li").nth(1).locator("a").click()
    expect(page).to_have_url(f"{base}/traces/{tid}?tab=roofline&ncu=1", timeout=TIMEOUT_MS)
    expect(page.locator("#trace-ncu-kernel")).to_have_text(names["1"], timeout=TIMEOUT_MS)
    expect(page.locator("#trace-ncu-rules")).to_contain_text("AchievedOccupancy")
    page.locator("#trace-ncu details summary").first.click()
    page.screenshot(path=artifacts / "ncu_sections_elementwise.png", full_page=True)
    assert page_errors.messages == []
