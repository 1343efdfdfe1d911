"""One way to write durations and sizes on every page (issue 42, item 7), on a real H200
trace: the upload row and the list write the file's size alike; Operators, Ranges and the
Query tab write times by magnitude (`1.59 ms`, never `1589.537` µs or raw ns).

Every expected number comes from outside perfdash: the file's size on disk, torch's own
`key_averages()` (taken when the trace was recorded), the gz file's own events read here
with json, and the fixture's kernel sums. Their text is `dashboard.format`'s, which the
page's script (assets/units.js) must match.
"""

from __future__ import annotations

import gzip
import json
import re
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from playwright.sync_api import Page, expect

from dashboard.format import format_bytes, format_duration_ns
from tests.conftest import DATA

if TYPE_CHECKING:
    from tests.browser.conftest import PageErrors, Server

pytestmark = [pytest.mark.browser, pytest.mark.integration]
expect.set_options(timeout=30_000)
TRACE = DATA / "torch" / "h200_train_step.pt.trace.json.gz"
AREA = "#traces-upload"
UNIT_TEXT = re.compile(r"^-?\d+(\.\d{1,2})? (ns|µs|ms|s)$")


def _cell(page: Page, grid: str, row: str, col: str) -> str:
    """The text of column `col` in the grid's row whose first `name` cell reads `row`
    (a pinned column is a row of its own in AG Grid's DOM: matched by `row-index`)."""
    name = page.locator(f'{grid} .ag-cell[col-id="name"]').filter(
        has_text=re.compile(f"^{re.escape(row)}$")
    )
    index = name.first.locator("xpath=ancestor::div[@row-index][1]").get_attribute("row-index")
    cell = page.locator(f'{grid} [row-index="{index}"] .ag-cell[col-id="{col}"]')
    return str(cell.first.text_content())


def _annotation_total_ns(name: str) -> int:
    """The summed `dur` of the file's CPU `user_annotation` events named `name`, in ns."""
    doc = json.loads(gzip.decompress(TRACE.read_bytes()), parse_float=Decimal)
    events: list[dict[str, Any]] = doc["traceEvents"]
    durs = [e["dur"] for e in events if e.get("cat") == "user_annotation" and e["name"] == name]
    assert durs, name
    return int(sum(durs) * 1000)


def test_sizes_and_durations_read_alike_on_every_page(
    module_server: Server, page: Page, page_errors: PageErrors, artifacts: Path
) -> None:
    base = module_server.base_url
    size = format_bytes(TRACE.stat().st_size)
    page.goto(base + "/")
    page.set_input_files(f"{AREA} .upload-files-input", TRACE)
    expect(page.locator(f"{AREA} .upload-file-head")).to_contain_text(size)
    page.click(f"{AREA} .upload-send")
    line = page.locator(f"{AREA} .upload-result")
    expect(line).to_have_attribute("data-status", "ready", timeout=90_000)
    tid = str(line.get_attribute("data-trace-id"))
    row = page.locator(f'#traces-table tr[data-trace-id="{tid}"]')
    expect(row.locator("td.num").first).to_have_text(size)

    # Operators: torch's own device time of aten::copy_, by magnitude.
    averages = json.loads(TRACE.with_name("h200_train_step.key_averages.json").read_text())
    copy = next(e for e in averages["entries"] if e["name"] == "aten::copy_")
    page.goto(f"{base}/traces/{tid}?tab=operators&q=aten%3A%3Acopy_")
    grid = "#trace-operators-grid"
    expect(page.locator(f'{grid} .ag-cell[col-id="name"]').first).to_have_text("aten::copy_")
    shown = _cell(page, grid, "aten::copy_", "device_total_ns")
    assert shown == format_duration_ns(round(copy["device_time_total_us"] * 1000)), shown
    for col in ("cpu_total_ns", "cpu_self_ns", "device_self_ns", "cpu_avg_ns"):
        assert UNIT_TEXT.match(_cell(page, grid, "aten::copy_", col)), col
    page.screenshot(path=artifacts / "units_operators.png", full_page=True)

    # Ranges: the file's own total of the `compute` record_function range.
    page.goto(f"{base}/traces/{tid}?tab=ranges")
    grid = "#trace-ranges-grid"
    expect(page.locator(f'{grid} .ag-cell[col-id="name"]').first).to_be_visible()
    assert _cell(page, grid, "compute", "total") == format_duration_ns(
        _annotation_total_ns("compute")
    )
    for col in ("avg", "med", "min", "max"):
        assert UNIT_TEXT.match(_cell(page, grid, "compute", col)), col
    page.screenshot(path=artifacts / "units_ranges.png", full_page=True)

    # Query: a `_ns` column reads by magnitude; the top kernel's sum is the fixture's.
    sums = json.loads(TRACE.with_name("h200_train_step.kernel_sums.json").read_text())
    top = max(sums["kernels"], key=lambda k: int(k["total_ns"]))
    sql = "SELECT name, sum(dur_ns) AS total_ns FROM kernels GROUP BY name ORDER BY 2 DESC"
    page.goto(f"{base}/traces/{tid}?tab=query")
    page.locator("#trace-query-sql").fill(sql)
    page.locator("#trace-query-run").click()
    first = page.locator('#trace-query-grid .ag-center-cols-container .ag-row[row-index="0"]')
    expect(first.locator('.ag-cell[col-id="c0"]')).to_have_text(top["name"])
    expect(first.locator('.ag-cell[col-id="c1"]')).to_have_text(
        format_duration_ns(int(top["total_ns"]))
    )
    expect(page.locator("#trace-query-chart .xtick text").last).to_contain_text(" µs")
    page.screenshot(path=artifacts / "units_query.png", full_page=True)

    # The timeline draws with the same shared helpers (no script error on its page).
    page.goto(f"{base}/traces/{tid}/timeline")
    page.wait_for_function("window.perfdashTimeline && window.perfdashTimeline.ready")
    assert page_errors.messages == []
