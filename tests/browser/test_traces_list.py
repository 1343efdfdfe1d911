"""The traces list as a user clicks it: past the first 50, filtered by project and by tag,
a long error kept to one line and opened, two traces compared, one renamed and tagged, one
deleted after a confirmation naming it.

124 traces are inserted straight into the server's database (`tests.factories.insert_traces`)
so no parsing runs; what each page must show is computed here from those rows. Screenshots
go to `test-artifacts/` (and, with PERFDASH_DOCS_SCREENSHOTS=1, to docs/img/).
"""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from playwright.sync_api import Locator, Page, expect
from sqlalchemy import create_engine

from tests.factories import insert_traces

if TYPE_CHECKING:
    from tests.browser.conftest import PageErrors, Server

pytestmark = [pytest.mark.browser, pytest.mark.integration]

DOCS_IMG = Path(__file__).resolve().parents[2] / "docs" / "img"
PROJECTS = ("llm-pretrain", "vision", "inference")
TAGS = (["h200", "fp8"], ["a100"], [], ["h200", "baseline"])
ERROR = (
    "IngestError: chrome_json: unexpected token at byte 18,734,112 of rank3.pt.trace.json "
    "(line 412,907, column 44): expected ',' or '}' after an object member\n"
    "  while reading traceEvents[1,048,576] (a 'X' event of category 'kernel')\n"
    "  the file ends mid-event: was the profiler killed while writing it?"
)
ROWS = "#traces-table tbody tr[data-trace-id]"


def _seed() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = [
        {
            "name": f"{PROJECTS[i % 3]}-step{i:03d}.pt.trace.json.gz",
            "project": PROJECTS[i % 3],
            "format": ("torch_profiler", "nsys_sqlite")[i % 2],
            "tags": TAGS[i % 4],
            "size_bytes": 1_000_000 + (i * 7_919_123) % 90_000_000,
            "event_counts": {"kernel": (i * 1013) % 50_000, "cpu_op": (i * 331) % 9000},
            "duration_ns": 50_000_000 + i * 1_000_000,
            "created_at": datetime(2026, 11, 1, tzinfo=UTC) + timedelta(hours=5 * i),
        }
        for i in range(124)
    ]
    rows[-2] |= {"name": "rank3-killed.pt.trace.json", "status": "failed", "error": ERROR,
                 "event_counts": {}, "format": None}  # fmt: skip
    rows[-5] |= {"status": "failed", "error": "not a trace: empty file", "event_counts": {}}
    rows[-1] |= {"note": "baseline before the fused-attention change"}
    return rows


SEED = _seed()


@pytest.fixture(scope="module")
def seeded(module_server: Server) -> Server:
    database = Path(module_server.env["PERFDASH_DATA_DIR"]) / "perfdash.db"
    insert_traces(create_engine(f"sqlite:///{database}"), SEED)
    return module_server


def _names(page: Page) -> list[str]:
    return page.locator(f"{ROWS} .trace-name").all_inner_texts()


def _newest_first(rows: list[dict[str, Any]]) -> list[str]:
    return [r["name"] for r in sorted(rows, key=lambda r: r["created_at"], reverse=True)]


def _pick(page: Page, dropdown: str, value: str) -> None:
    page.click(f"#{dropdown}")
    page.locator(".dash-dropdown-options").get_by_text(value, exact=True).click()


def _shot(
    page: Page, artifacts: Path, name: str, target: Locator | None = None, height: float = 640
) -> None:
    """Save a screenshot of the viewport, or of `target`'s box cut (or grown) to `height`."""
    paths = [artifacts / f"{name}.png"]
    if os.environ.get("PERFDASH_DOCS_SCREENSHOTS"):
        paths.append(DOCS_IMG / f"{name}.png")
    box = target.bounding_box() if target else None
    clip = {**box, "height": height} if box else None
    for path in paths:
        page.screenshot(path=path, clip=clip)  # type: ignore[arg-type]


def _height(row: Locator) -> float:
    box = row.bounding_box()
    assert box is not None
    return float(box["height"])


def test_page_two_then_filter_by_project_and_tag(
    seeded: Server, page: Page, page_errors: PageErrors, artifacts: Path
) -> None:
    expected = _newest_first(SEED)
    page.goto(seeded.base_url + "/")
    expect(page.locator(ROWS)).to_have_count(50)
    expect(page.locator(".list-footer")).to_contain_text("Showing 1\u201350 of 124.")
    assert _names(page) == expected[:50]

    page.get_by_title("Next page").click()
    expect(page).to_have_url(re.compile(r"/\?page=2$"))
    expect(page.locator(".list-footer")).to_contain_text("Showing 51\u2013100 of 124.")
    assert _names(page) == expected[50:100]

    _pick(page, "traces-filter-project", "vision")
    expect(page).to_have_url(re.compile(r"project=vision"))  # a filter goes back to page 1
    vision = [r for r in SEED if r["project"] == "vision"]
    expect(page.locator(".list-footer")).to_contain_text(f"of {len(vision)}.")
    assert _names(page) == _newest_first(vision)

    _pick(page, "traces-filter-tag", "h200")
    both = [r for r in vision if "h200" in r["tags"]]
    expect(page.locator(".list-footer")).to_contain_text(f"of {len(both)}.")
    assert _names(page) == _newest_first(both)
    assert "project=vision" in page.url and "tag=h200" in page.url
    _shot(page, artifacts, "traces_list", page.locator(".card").last)

    page.locator("#traces-table th").get_by_role("link", name="Size").click()
    expect(page).to_have_url(re.compile(r"&sort=size$"))  # largest first, the default order
    by_size = sorted(both, key=lambda r: r["size_bytes"], reverse=True)
    expect(page.locator(f"{ROWS} .trace-name").first).to_have_text(by_size[0]["name"])
    assert _names(page) == [r["name"] for r in by_size]

    page.reload()  # the URL holds the view
    expect(page.locator(f"{ROWS} .trace-name").first).to_have_text(by_size[0]["name"])
    expect(page.locator(".list-footer")).to_contain_text(f"of {len(both)}.")
    assert page_errors.messages == []


def test_long_error_keeps_its_row_height_and_opens(
    seeded: Server, page: Page, page_errors: PageErrors, artifacts: Path
) -> None:
    page.goto(seeded.base_url + "/?status=failed")
    failed = page.locator(ROWS).filter(has_text="rank3-killed")
    short = page.locator(ROWS).filter(has_text="not a trace: empty file")
    expect(failed.locator("summary")).to_contain_text("IngestError: chrome_json")
    expect(failed.locator(".error-full")).to_be_hidden()
    height = _height(failed)
    assert height == _height(short)

    failed.locator(".error-more").click()  # "more", drawn by CSS
    full = failed.locator(".error-full")
    expect(full).to_be_visible()
    expect(full).to_have_text(ERROR)
    assert _height(failed) == height  # the panel opens over the rows below
    _shot(page, artifacts, "traces_list_error", page.locator(".card").last, height=400)
    failed.locator(".error-more").click()  # now "less"
    expect(full).to_be_hidden()
    assert page_errors.messages == []


def _check(page: Page, name: str) -> None:
    page.locator(ROWS).filter(has_text=name).locator(".row-select input").check()


def test_edit_one_delete_one_after_confirming_then_compare_two(
    seeded: Server, page: Page, page_errors: PageErrors, artifacts: Path
) -> None:
    api = f"{seeded.base_url}/api/v1/traces"
    page.goto(seeded.base_url + "/?project=inference")
    inference = [r for r in SEED if r["project"] == "inference"]
    expect(page.locator(ROWS)).to_have_count(len(inference))
    names = _names(page)
    assert names == _newest_first(inference)
    compare, delete = page.locator("#traces-compare"), page.locator("#traces-delete")
    row = page.locator(ROWS).filter(has_text=names[2])
    row.get_by_role("button", name="Edit").click()
    expect(page.locator("#traces-edit-name")).to_have_value(names[2])
    page.fill("#traces-edit-name", "renamed by hand")
    page.fill("#traces-edit-tags", "Regression, H200")
    page.locator("#traces-edit-save").click()
    expect(page.locator("#traces-edit-dialog")).to_be_hidden(timeout=20_000)
    renamed = page.locator(ROWS).filter(has_text="renamed by hand")
    expect(renamed.locator(".tag")).to_have_text(["regression", "h200"])
    trace_id = renamed.get_attribute("data-trace-id")
    assert httpx.get(f"{api}/{trace_id}", timeout=10).json()["tags"] == ["regression", "h200"]

    before = httpx.get(api, params={"project": "inference"}, timeout=10).json()["count"]
    _check(page, "renamed by hand")
    delete.click()
    dialog = page.locator("#traces-delete-dialog")
    expect(dialog).to_be_visible()
    expect(dialog.locator(".delete-names li")).to_have_text(["renamed by hand"])
    _shot(page, artifacts, "traces_list_delete")
    page.locator("#traces-delete-cancel").click()
    expect(dialog).to_be_hidden()
    assert httpx.get(f"{api}/{trace_id}", timeout=10).status_code == 200  # cancel keeps it

    delete.click()
    page.locator("#traces-delete-confirm").click()
    expect(page.locator("#traces-list-notice")).to_contain_text("Deleted 1 trace.")
    expect(page.locator(ROWS).filter(has_text="renamed by hand")).to_have_count(0)
    assert httpx.get(f"{api}/{trace_id}", timeout=10).status_code == 404
    after = httpx.get(api, params={"project": "inference"}, timeout=10).json()["count"]
    assert after == before - 1

    expect(compare).to_be_disabled()
    _check(page, names[0])
    expect(compare).to_be_disabled()  # exactly two
    _check(page, names[1])
    expect(compare).to_be_enabled()
    expect(delete).to_have_text("Delete 2")
    ids = [page.locator(ROWS).filter(has_text=n).get_attribute("data-trace-id") for n in names[:2]]
    compare.click()
    expect(page).to_have_url(f"{seeded.base_url}/compare?a={ids[0]}&b={ids[1]}")
    assert page_errors.messages == []
