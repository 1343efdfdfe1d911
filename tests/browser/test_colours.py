"""One colour per category on every page (issue 42, item 10), on a real H200 trace: the
Overview's legend, the Timeline's legend and the pixels the canvas draws for a host-to-
device copy agree (memcpy was orange on the Overview and purple on the Timeline).

The slice is found in the gz file itself (read here with json); the canvas is read back
with `getImageData`, as a user's eye would see it.
"""

from __future__ import annotations

import colorsys
import gzip
import json
import re
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import upload_and_wait
from tests.conftest import DATA

if TYPE_CHECKING:
    from tests.browser.conftest import PageErrors, Server

pytestmark = [pytest.mark.browser, pytest.mark.integration]
expect.set_options(timeout=30_000)
TRACE = DATA / "torch" / "h200_train_step.pt.trace.json.gz"
HOOK = "window.perfdashTimeline"
# The Overview's legend names -> the Timeline legend's categories of the same colour.
SAME = {"Compute kernels": "compute", "Communication (NCCL/RCCL)": "communication",
        "Memcpy": "memcpy_htod", "Memset": "memset"}  # fmt: skip


def _rgb(text: str) -> tuple[int, int, int]:
    r, g, b = (int(v) for v in re.findall(r"\d+", text)[:3])
    return r, g, b


def _hue(rgb: tuple[int, int, int]) -> float:
    return colorsys.rgb_to_hls(*(c / 255 for c in rgb))[0] * 360


def _first_htod_copy() -> tuple[int, int]:
    """(start, end) in epoch ns of the file's first `Memcpy HtoD` event."""
    doc = json.loads(gzip.decompress(TRACE.read_bytes()), parse_float=Decimal)
    base = int(doc.get("baseTimeNanoseconds", 0))
    copies = [e for e in doc["traceEvents"] if e.get("cat") == "gpu_memcpy"
              and "HtoD" in e["name"]]  # fmt: skip
    first = min(copies, key=lambda e: e["ts"])
    start = base + int(first["ts"] * 1000)
    return start, start + int(first["dur"] * 1000)


def _overview_legend(page: Page) -> dict[str, tuple[int, int, int]]:
    legend = page.locator('[id$="-split-chart"] g.legend g.traces')
    expect(legend.first).to_be_visible()
    out = {}
    for k in range(legend.count()):
        item = legend.nth(k)
        fill = item.locator(".legendpoints path").first.evaluate("(e) => e.style.fill")
        out[str(item.locator(".legendtext").text_content())] = _rgb(str(fill))
    return out


def _canvas_hues(page: Page) -> list[float]:
    """Hues of the saturated pixels the timeline's canvas drew (greys left out)."""
    pixels: list[Any] = page.evaluate(
        """() => {
            const c = document.querySelector('#perfdash-timeline canvas');
            const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
            const out = [];
            for (let i = 0; i < d.length; i += 16) out.push([d[i], d[i + 1], d[i + 2]]);
            return out;
        }"""
    )
    rgbs = [tuple(p) for p in pixels]
    saturated = [p for p in rgbs if max(p) - min(p) > 60]
    return [_hue(p) for p in saturated]  # type: ignore[arg-type]


def test_categories_have_one_colour_on_the_overview_and_the_timeline(
    module_server: Server, page: Page, page_errors: PageErrors, artifacts: Path
) -> None:
    base = module_server.base_url
    tid = str(upload_and_wait(module_server, TRACE.read_bytes(), TRACE.name)["id"])
    page.goto(f"{base}/traces/{tid}")
    overview = _overview_legend(page)
    assert set(SAME) <= set(overview), overview
    page.screenshot(path=artifacts / "colours_overview.png", full_page=True)

    start, end = _first_htod_copy()
    pad = (end - start) // 20
    page.goto(f"{base}/traces/{tid}/timeline?start_ns={start + pad}&end_ns={end - pad}")
    page.wait_for_function(f"{HOOK} && {HOOK}.ready")
    legend = page.locator("#timeline-legend")
    for name, category in SAME.items():
        swatch = legend.locator(f'[data-category="{category}"] .legend-swatch')
        colour = _rgb(str(swatch.evaluate("(e) => getComputedStyle(e).backgroundColor")))
        assert colour == overview[name], (name, colour, overview[name])
    expect(legend).to_contain_text("memcpy H2D")

    # Inside the copy, the canvas's copy lane is the Overview's memcpy orange (a shade of
    # it: within the few degrees a name may move), and nothing is the old purple.
    slices = page.evaluate(f"{HOOK}.slicesInView()")
    assert any(s["category"] == "memcpy_htod" for s in slices), slices
    orange = _hue(overview["Memcpy"])
    hues = _canvas_hues(page)
    assert sum(1 for h in hues if abs(h - orange) <= 8) > 200, sorted(set(round(h) for h in hues))
    assert not any(270 <= h <= 330 for h in hues)
    page.screenshot(path=artifacts / "colours_timeline.png", full_page=True)
    assert page_errors.messages == []
