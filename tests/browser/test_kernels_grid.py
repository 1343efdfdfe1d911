"""The trace page's kernels grid (dash-ag-grid) in headless Chromium, with a real upload.

Sorting is a header click, paging the buttons under the grid; both go through the URL
to the API, which sorts and pages. A long name shows shortened with its full text in a
tooltip, and a name that is HTML shows as text. Screenshots go to `test-artifacts/`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from playwright.sync_api import Dialog, Page, expect

from dashboard.format import shorten_kernel_name
from tests.browser.conftest import KERNEL_LABELS, upload_and_wait
from tests.views.kineto_builder import document, kernel, step

if TYPE_CHECKING:
    from tests.browser.conftest import PageErrors, Server

pytestmark = [pytest.mark.browser, pytest.mark.integration]

TIMEOUT_MS = 30_000
expect.set_options(timeout=TIMEOUT_MS)

PAGE_SIZE = 50  # KernelQuery.page_size: the API's page, as the DataTable had it
HOSTILE = "<img src=x onerror=alert(1)>"
LONG = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>,"
    " at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, "
    "at::detail::Array<char*, 3>)"
)
PLAIN = [f"plain_kernel_{i:02d}" for i in range(58)]
COUNT_CELLS = '#trace-kernels-table .ag-center-cols-container .ag-cell[col-id="count"]'
# Any element the hostile name would create if it reached the DOM as HTML.
INJECTED = "() => document.querySelectorAll('img[src=\"x\"], [onerror]').length"


def _trace() -> bytes:
    """60 kernels: the long and the hostile one largest by total time (so on page 1), and
    launch counts that order differently from total time (1-5 launches each)."""
    events: list[dict[str, Any]] = [step(1, 0, 200_000)]
    ts = 10.0
    named = [(LONG, 2, 900.0), (HOSTILE, 2, 800.0)]
    named += [(n, 1 + i % 5, 10.0 + i) for i, n in enumerate(PLAIN)]
    for name, count, dur in named:
        for _ in range(count):
            events.append(kernel(name, ts, dur))
            ts += dur + 1
    return document(events)


def _counts(page: Page) -> list[int]:
    return [int(t.replace(",", "")) for t in page.locator(COUNT_CELLS).all_text_contents()]


def _tooltip_of(page: Page, label: str) -> str:
    """Hover the label cell showing `label` and read the grid's tooltip."""
    page.mouse.move(0, 0)
    page.locator(KERNEL_LABELS).filter(has_text=label).first.hover()
    tooltip = page.locator(".ag-tooltip")
    expect(tooltip).to_be_visible()
    return tooltip.inner_text()


def test_kernels_grid_sorts_pages_and_shows_names_as_text(
    module_server: Server, page: Page, page_errors: PageErrors, artifacts: Path
) -> None:
    dialogs: list[str] = []

    def on_dialog(dialog: Dialog) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    base = module_server.base_url
    tid = upload_and_wait(module_server, _trace(), "grid.json")["id"]
    page.goto(f"{base}/traces/{tid}?tab=kernels")
    labels = page.locator(KERNEL_LABELS)
    expect(labels).to_have_count(PAGE_SIZE)
    expect(labels.first).to_have_text(shorten_kernel_name(LONG, 70))
    expect(page.locator("#trace-kernels-found")).to_contain_text("60 rows")
    expect(page.locator('.ag-header-cell[col-id="total_ns"]')).to_have_attribute(
        "aria-sort", "descending"
    )

    # The long name is shortened in its cell and whole in the tooltip; the hostile one is
    # text in both, and nothing it would create as HTML exists.
    assert _tooltip_of(page, shorten_kernel_name(LONG, 70)) == LONG
    page.screenshot(path=artifacts / "kernels_grid_tooltip.png")
    expect(labels.nth(1)).to_have_text(shorten_kernel_name(HOSTILE, 70))
    assert _tooltip_of(page, shorten_kernel_name(HOSTILE, 70)) == HOSTILE
    page.screenshot(path=artifacts / "kernels_grid_hostile_tooltip.png")
    assert page.evaluate(INJECTED) == 0

    # A header click sorts by that column, through the URL and the API.
    assert _counts(page) != sorted(_counts(page), reverse=True)
    page.locator('.ag-header-cell[col-id="count"]').click()
    expect(page).to_have_url(f"{base}/traces/{tid}?tab=kernels&sort=count")
    expect(page.locator('.ag-header-cell[col-id="count"]')).to_have_attribute(
        "aria-sort", "descending"
    )
    expect(page.locator(COUNT_CELLS).first).to_have_text("5")
    assert _counts(page) == sorted(_counts(page), reverse=True)
    page.screenshot(path=artifacts / "kernels_grid_sorted.png", full_page=True)

    # The page buttons fetch the next page of the same sort; the last page is short.
    first_page = set(labels.all_text_contents())
    expect(page.locator(".pager-position")).to_have_text("Page 1 of 2")
    page.get_by_title("Next page").click()
    expect(page).to_have_url(f"{base}/traces/{tid}?tab=kernels&sort=count&page=1")
    expect(page.locator(".pager-position")).to_have_text("Page 2 of 2")
    expect(labels).to_have_count(60 - PAGE_SIZE)
    assert first_page.isdisjoint(labels.all_text_contents())
    assert _counts(page) == sorted(_counts(page), reverse=True)
    expect(page.get_by_title("Next page")).to_be_disabled()
    page.get_by_title("First page").click()
    expect(page).to_have_url(f"{base}/traces/{tid}?tab=kernels&sort=count")
    expect(labels).to_have_count(PAGE_SIZE)

    assert page.evaluate(INJECTED) == 0
    assert dialogs == []
    assert page_errors.messages == []
