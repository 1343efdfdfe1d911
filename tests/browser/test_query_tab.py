"""The trace page's Query tab in headless Chromium, on a real H200 trace.

An example link runs its query; the result grid sorts and pages in the browser; a chart
appears for a label + number result; Run puts the SQL in the URL, so the link reproduces
the result; the CSV download holds every row; a refused statement shows the API's
reason. Screenshots go to `test-artifacts/`.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlparse

import httpx
import pytest
from playwright.sync_api import Page, expect

from dashboard.components.query_examples import EXAMPLES
from tests.browser.conftest import upload_and_wait
from tests.conftest import DATA

if TYPE_CHECKING:
    from tests.browser.conftest import PageErrors, Server

pytestmark = [pytest.mark.browser, pytest.mark.integration]

TIMEOUT_MS = 30_000
expect.set_options(timeout=TIMEOUT_MS)
H200 = DATA / "torch" / "h200_train_step.pt.trace.json.gz"
GRID = "#trace-query-grid"
CELLS = GRID + ' .ag-center-cols-container .ag-cell[col-id="{}"]'


def _column(page: Page, col: str) -> list[str]:
    return page.locator(CELLS.format(col)).all_text_contents()


def test_query_tab_runs_examples_and_typed_sql(
    module_server: Server, page: Page, page_errors: PageErrors, artifacts: Path
) -> None:
    base = module_server.base_url
    tid = upload_and_wait(module_server, H200.read_bytes(), H200.name)["id"]
    kernels = httpx.get(f"{base}/api/v1/traces/{tid}/kernels", params={"limit": 10}).json()
    page.goto(f"{base}/traces/{tid}?tab=query")
    expect(page.locator("#trace-detail-tab-query")).to_have_class("tab-link tab-active")
    expect(page.locator(".query-schema")).to_contain_text("kernels")
    expect(page.locator(".query-schema")).to_contain_text("registers_per_thread")

    # An example is a link: it runs, fills a grid, and draws a chart (name + number).
    page.get_by_role("link", name="Top kernels").click()
    expect(page.locator("#trace-query-sql")).to_have_value(EXAMPLES["Top kernels"])
    assert parse_qs(urlparse(page.url).query)["sql"][0].startswith("SELECT name, count(*)")
    expect(page.locator(CELLS.format("c0"))).to_have_count(10)
    expect(page.locator(CELLS.format("c0")).first).to_have_text(kernels["items"][0]["name"])
    expect(page.locator("#trace-query-chart .main-svg").first).to_be_visible()
    page.screenshot(path=artifacts / "query_top_kernels.png", full_page=True)

    # The grid sorts in the browser: a header click orders by launch count.
    page.locator(f'{GRID} .ag-header-cell[col-id="c1"]').click()
    counts = [int(c.replace(",", "")) for c in _column(page, "c1")]
    assert counts == sorted(counts) and counts != [k["count"] for k in kernels["items"]]

    # Typed SQL: Run puts it in the URL; the grid pages the rows; a fresh page at that URL
    # shows the same result.
    total = httpx.post(
        f"{base}/api/v1/traces/{tid}/query", json={"sql": "SELECT count(*) FROM events"}
    ).json()["rows"][0][0]
    sql = "SELECT id, kind, name, dur_ns FROM events ORDER BY id"
    page.locator("#trace-query-sql").fill(sql)
    page.locator("#trace-query-run").click()
    expect(page).to_have_url(
        f"{base}/traces/{tid}?tab=query&sql=SELECT+id%2C+kind%2C+name%2C+dur_ns+FROM+events+ORDER+BY+id"
    )
    expect(page.locator("#trace-query-summary")).to_contain_text(f"{total} rows")
    expect(page.locator(f"{GRID} .ag-paging-row-summary-panel")).to_contain_text(
        f"1 to 50 of {total}"
    )
    assert _column(page, "c0")[:3] == ["1", "2", "3"]
    page.locator(f"{GRID} .ag-paging-button[aria-label='Next Page']").click()
    expect(page.locator(f"{GRID} .ag-paging-row-summary-panel")).to_contain_text(
        f"51 to 100 of {total}"
    )
    assert _column(page, "c0")[0] == "51"
    page.screenshot(path=artifacts / "query_events_page2.png", full_page=True)

    # The CSV holds every row of the result, not only the page shown.
    with page.expect_download() as download:
        page.locator("#trace-query-csv").click()
    rows = list(
        csv.reader(io.StringIO(Path(download.value.path()).read_text(encoding="utf-8-sig")))
    )
    assert rows[0] == ["id", "kind", "name", "dur_ns"] and len(rows) == total + 1
    assert rows[1][0] == "1"

    link = page.url
    other = page.context.new_page()
    other.goto(link)
    expect(other.locator("#trace-query-sql")).to_have_value(sql)
    expect(other.locator(f"{GRID} .ag-paging-row-summary-panel")).to_contain_text(f"of {total}")
    other.close()

    # A refused statement shows the API's reason, and the page keeps working.
    page.locator("#trace-query-sql").fill("COPY events TO '/tmp/perfdash-query.csv'")
    page.locator("#trace-query-run").click()
    expect(page.locator("#trace-query-error")).to_contain_text("only SELECT is allowed")
    page.screenshot(path=artifacts / "query_refused.png", full_page=True)
    assert not Path("/tmp/perfdash-query.csv").exists()
    assert page_errors.messages == []


def test_query_tab_examples_all_answer(
    module_server: Server, page: Page, page_errors: PageErrors, artifacts: Path
) -> None:
    base = module_server.base_url
    tid = upload_and_wait(module_server, H200.read_bytes(), H200.name)["id"]
    page.goto(f"{base}/traces/{tid}?tab=query")
    for name in ("Launch delay percentiles", "Pageable copies", "Ops by self time", "Top kernels"):
        page.get_by_role("link", name=name).click()
        expect(page.locator("#trace-query-sql")).to_have_value(EXAMPLES[name])
        expect(page.locator("#trace-query-summary")).to_be_visible()
        expect(page.locator("#trace-query-error")).to_have_count(0)
        expect(page.locator(CELLS.format("c0")).first).to_be_visible()
        slug = name.lower().replace(" ", "_")
        page.screenshot(path=artifacts / f"query_{slug}.png", full_page=True)
    assert page_errors.messages == []


def test_run_with_an_empty_editor_says_what_to_do_and_offers_the_hint(
    module_server: Server, page: Page, page_errors: PageErrors, artifacts: Path
) -> None:
    base = module_server.base_url
    tid = upload_and_wait(module_server, H200.read_bytes(), H200.name)["id"]
    url = f"{base}/traces/{tid}?tab=query"
    page.goto(url)
    expect(page.locator("#trace-query-sql")).to_have_value("")
    page.locator("#trace-query-run").click()
    hint = page.locator("#trace-query-hint")
    expect(hint).to_contain_text("The editor is empty")
    expect(page).to_have_url(url)  # nothing ran
    expect(page.locator("#trace-query-summary")).to_have_count(0)
    page.screenshot(path=artifacts / "query_empty_run.png", full_page=True)

    # The hint's query (kernel time by name) runs; its top row is the fixture's own
    # largest kernel by total time, as the profiler wrote them down.
    hint.get_by_role("link", name="run the hint").click()
    placeholder = page.locator("#trace-query-sql").get_attribute("placeholder")
    expect(page.locator("#trace-query-sql")).to_have_value(str(placeholder))
    sums = json.loads(H200.with_name("h200_train_step.kernel_sums.json").read_text())["kernels"]
    top = max(sums, key=lambda k: int(k["total_ns"]))["name"]
    expect(page.locator(CELLS.format("c0")).first).to_have_text(top)
    expect(page.locator("#trace-query-summary")).to_contain_text(f"{len(sums)} rows")
    assert page_errors.messages == []
