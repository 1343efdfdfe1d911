"""Hostile kernel, op and upload names are shown as text on every trace view, never run.

A small Kineto trace whose kernels and CPU ops are named with HTML and script payloads is
uploaded under a hostile file name, then its trace page (overview, kernels by name and by
CPU op) and its timeline (lanes, search, event detail) are opened in Chromium. Each name
must appear literally (in the text, or in full in a tooltip where the label is
shortened), no dialog may open, no element the payloads would create may exist, and the
console must stay free of errors.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from playwright.sync_api import Dialog, Page, expect

from dashboard.format import shorten_kernel_name
from tests.browser.conftest import KERNEL_LABELS, upload_and_wait
from tests.views.kineto_builder import cpu_op, document, kernel, launch, step

if TYPE_CHECKING:
    from tests.browser.conftest import PageErrors, Server

pytestmark = [pytest.mark.browser, pytest.mark.integration]

TIMEOUT_MS = 30_000
expect.set_options(timeout=TIMEOUT_MS)

KERNELS = (
    "<img src=x onerror=alert(1)>",
    "<script>alert(2)</script>",
    '"><svg onload=alert(3)>',
)
OPS = (
    "aten::<img src=x onerror=alert(4)>",
    "<script>alert(5)</script>",
    "'\"><svg/onload=alert(6)>",
)
UPLOAD_NAME = '"><img src=x onerror=alert(7)>.json'
# Elements the payloads would create if any string reached the DOM as HTML: an image
# with src=x, any inline event handler, or a script that calls alert. Dash's config is a
# JSON script element (never run) that holds the initial layout, upload names included.
INJECTED_JS = """() => [...document.querySelectorAll('*')].filter(e =>
    (e.tagName === 'IMG' && e.getAttribute('src') === 'x')
    || [...e.attributes].some(a => a.name.toLowerCase().startsWith('on'))
    || (e.tagName === 'SCRIPT' && e.type !== 'application/json'
        && e.textContent.includes('alert('))
).map(e => e.outerHTML.slice(0, 200))"""


def _hostile_trace() -> bytes:
    events: list[dict[str, Any]] = [step(1, 0, 3_000)]
    for i, (k, op) in enumerate(zip(KERNELS, OPS, strict=True)):
        ts = 100 + i * 900
        events += [
            cpu_op(op, ts, 50, ext=i + 1),
            launch(ts + 10, 20, correlation=i + 1),
            kernel(k, ts + 60, 400 + 100 * i, ext=i + 1),
        ]
    return document(events)


def _titles(page: Page, selector: str) -> set[str]:
    return set(page.locator(selector).evaluate_all("els => els.map(e => e.title)"))


def _texts(page: Page, selector: str) -> set[str]:
    return {t.strip() for t in page.locator(selector).all_text_contents()}


def test_hostile_names_render_as_text_on_every_trace_view(
    perfdash_server: Server, page: Page, page_errors: PageErrors, artifacts: Path
) -> None:
    dialogs: list[str] = []

    def on_dialog(dialog: Dialog) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    base = perfdash_server.base_url
    trace = upload_and_wait(perfdash_server, _hostile_trace(), UPLOAD_NAME)
    tid = trace["id"]
    assert "<img src=x onerror=alert(7)>" in trace["name"]

    # Overview: the header carries the upload name; the top-kernel table and chart the
    # kernels (labels shortened, the full name in the row's tooltip).
    page.goto(f"{base}/traces/{tid}")
    rows = page.locator("#trace-detail-kernels-table .kernel-name")
    expect(rows).to_have_count(len(KERNELS))
    expect(page.locator("#trace-detail-title h1")).to_have_text(trace["name"])
    assert _titles(page, "#trace-detail-kernels-table .kernel-name") == set(KERNELS)
    short = {shorten_kernel_name(k) for k in KERNELS}
    assert _texts(page, "#trace-detail-kernels-table .kernel-name") == short
    ticks = page.locator("#trace-detail-kernels-chart .ytick text")
    assert set(ticks.all_text_contents()) == short
    page.screenshot(path=artifacts / "xss_overview.png", full_page=True)
    assert page.evaluate(INJECTED_JS) == []

    # Kernels tab, by kernel name and by the CPU op that launched each kernel.
    page.goto(f"{base}/traces/{tid}?tab=kernels")
    cells = page.locator(KERNEL_LABELS)
    expect(cells).to_have_count(len(KERNELS))
    assert _texts(page, KERNEL_LABELS) == short
    page.goto(f"{base}/traces/{tid}?tab=kernels&group=cpu_op")
    expect(page.locator("#trace-kernels-table")).to_contain_text(shorten_kernel_name(OPS[2]))
    expect(cells).to_have_count(len(OPS))
    assert _texts(page, KERNEL_LABELS) == {shorten_kernel_name(op) for op in OPS}
    page.screenshot(path=artifacts / "xss_kernels_by_op.png", full_page=True)
    assert page.evaluate(INJECTED_JS) == []

    # Timeline (drawn on a canvas; its panels are DOM text): stepping through the matches
    # of a search shows each hostile name in full as the selected event, and a kernel's
    # launching CPU op with it.
    page.goto(f"{base}/traces/{tid}/timeline")
    page.wait_for_function("window.perfdashTimeline && window.perfdashTimeline.ready")
    page.fill(".pdt-search", "alert")
    shown: set[str] = set()
    ops: set[str] = set()
    name = page.locator(".pdt-details .pdt-name")
    for _ in KERNELS + OPS:  # each name is one event: every step selects a new name
        page.press(".pdt-search", "Enter")
        page.wait_for_function(
            """seen => { const n = document.querySelector('.pdt-details .pdt-name');
                         return n && n.textContent && !seen.includes(n.textContent); }""",
            arg=sorted(shown),
        )
        shown.add(name.inner_text())
        launch = page.locator(".pdt-details tr", has_text="CPU op")
        if launch.count():
            ops.add(launch.locator("a").inner_text())
    assert shown == set(KERNELS + OPS)
    assert ops == set(OPS)
    page.screenshot(path=artifacts / "xss_timeline.png", full_page=True)
    assert page.evaluate(INJECTED_JS) == []

    # The traces list shows the upload name as text too.
    page.goto(f"{base}/traces")
    expect(page.get_by_text(trace["name"], exact=True).first).to_be_visible()
    assert page.evaluate(INJECTED_JS) == []

    assert dialogs == []
    assert page_errors.messages == []
