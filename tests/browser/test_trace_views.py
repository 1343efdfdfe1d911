"""The trace page's tabs and the compare page in headless Chromium, with real traces.

Each view must draw its charts WITH data (counted in Plotly's SVG), keep its state in the
URL, and render hostile kernel names as text. Screenshots go to `test-artifacts/`. The
tests share one server: each uploads its own traces and opens them by id.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest
from playwright.sync_api import Page, expect

from dashboard.format import shorten_kernel_name
from ingest.registry import SUPPORTED_FORMATS
from tests.browser.conftest import KERNEL_LABELS, upload_and_wait
from tests.views.kineto_builder import document, kernel, memory, step

if TYPE_CHECKING:
    from tests.browser.conftest import PageErrors, Server

pytestmark = [pytest.mark.browser, pytest.mark.integration]


REPO = Path(__file__).resolve().parents[2]
TORCH = REPO / "tests" / "data" / "torch" / "h200_train_step.pt.trace.json.gz"
GPT = REPO / "tests" / "data" / "torch" / "h200_gpt_small.pt.trace.json.gz"
CORPUS = REPO.parent / "shared" / "corpus" / "h200"
SCRIPT_NAME = "<script>window.__pwned = 1</script>"
TIMEOUT_MS = 30_000
expect.set_options(timeout=TIMEOUT_MS)  # a cold page loads Dash's bundles and four API calls


def _upload_id(server: Server, content: bytes, name: str) -> str:
    return str(upload_and_wait(server, content, name)["id"])


def _points(page: Page, chart: str) -> int:
    """Markers Plotly drew in a scatter chart (0 when it drew only an empty state)."""
    return page.locator(f"#{chart} .scatterlayer .points path").count()


def test_torch_trace_tabs_render_with_data(
    module_server: Server, page: Page, page_errors: PageErrors, artifacts: Path
) -> None:
    base = module_server.base_url
    tid = _upload_id(module_server, TORCH.read_bytes(), TORCH.name)
    other = _upload_id(module_server, GPT.read_bytes(), GPT.name)

    page.goto(f"{base}/traces/{tid}")
    expect(page.locator("#trace-detail-kernels-chart .bars .point path")).to_have_count(10)
    expect(page.locator("#trace-detail-split-chart .bars .point path").first).to_be_visible()
    expect(page.locator("#trace-detail-findings li").first).to_contain_text("%")
    expect(page.locator("#trace-detail-kpis")).to_contain_text("GPU utilization")
    page.screenshot(path=artifacts / "trace_views_overview.png", full_page=True)

    page.locator("#trace-detail-tab-kernels").click()
    expect(page).to_have_url(f"{base}/traces/{tid}?tab=kernels")
    expect(page.locator("#trace-kernels-top-chart .bars .point path")).to_have_count(10)
    cells = page.locator(KERNEL_LABELS)
    expect(cells).to_have_count(12, timeout=TIMEOUT_MS)
    page.locator("#trace-kernels-search").fill("gemm")
    page.locator("#trace-kernels-search").press("Enter")
    expect(page).to_have_url(f"{base}/traces/{tid}?tab=kernels&q=gemm", timeout=TIMEOUT_MS)
    expect(cells).to_have_count(2, timeout=TIMEOUT_MS)
    page.screenshot(path=artifacts / "trace_views_kernels.png", full_page=True)

    page.goto(f"{base}/traces/{tid}?tab=roofline&vs={other}")
    expect(page.locator("#trace-roofline-note")).to_contain_text("Estimated")
    expect(page.locator("#trace-roofline-chart .scatterlayer .points path").first).to_be_attached(
        timeout=TIMEOUT_MS
    )
    assert _points(page, "trace-roofline-chart") >= 3, "A and B points should both be drawn"
    expect(page.locator("#trace-roofline-chart .legend")).to_contain_text("B: bf16")
    page.screenshot(path=artifacts / "trace_views_roofline.png", full_page=True)

    page.locator("#trace-detail-tab-memory").click()
    expect(page).to_have_url(f"{base}/traces/{tid}?tab=memory")
    expect(page.locator("#trace-memory-chart .scatterlayer .js-line").first).to_be_attached()
    expect(page.locator("#trace-memory-chart .textpoint").first).to_contain_text("peak")
    page.screenshot(path=artifacts / "trace_views_memory.png", full_page=True)

    page.goto(f"{base}/compare?a={tid}&b={other}")
    expect(page.locator("#compare-metrics")).to_contain_text("Step time")
    expect(page.locator("#compare-delta-chart .bars .point path").first).to_be_visible()
    expect(page.locator("#compare-markdown")).to_contain_text("- Step time: ")
    _headline_agrees_with_charts(page, module_server, tid, other)
    page.screenshot(path=artifacts / "trace_views_compare.png", full_page=True)
    assert page_errors.messages == []


def _headline_agrees_with_charts(page: Page, server: Server, a: str, b: str) -> None:
    """Each headline line is drawn in its chart with the same delta, as the browser has it."""
    body = httpx.get(f"{server.base_url}/api/v1/compare", params={"a": a, "b": b}).json()
    assert body["basis"] == "per_step", body["basis_note"]  # both real traces have steps
    expect(page.locator("#compare-basis")).to_contain_text(body["basis_note"])
    expect(page.locator("#compare-headline li")).to_have_count(len(body["headline"]))
    assert body["headline"], "two different workloads should differ somewhere"
    bars = {}
    for chart in ("compare-delta-chart", "compare-category-chart"):
        keys, values, suffix = page.evaluate(_PLOTLY_BARS, chart)
        ns = _NS_PER[suffix.strip()]  # the axis's unit, as drawn: each bar back to ns
        bars[chart] = {k: v * ns for k, v in zip(keys, values, strict=True)}
    for i, h in enumerate(body["headline"]):
        shorten = h["kind"] == "kernel" and h["match"] != "op"
        label = shorten_kernel_name(h["label"]) if shorten else h["label"]
        expect(page.locator("#compare-headline li").nth(i)).to_contain_text(label)
        chart = "compare-delta-chart" if h["kind"] == "kernel" else "compare-category-chart"
        assert bars[chart][h["key"]] == pytest.approx(h["delta"]), h


# The keys and values of a Dash graph's bars, read from the figure Plotly drew.
_PLOTLY_BARS = """(id) => {
    const plot = document.querySelector(`#${id} .js-plotly-plot`);
    const trace = plot.data[0];
    return [Array.from(trace.customdata), Array.from(trace.x), plot.layout.xaxis.ticksuffix || ""];
}"""
_NS_PER = {"ns": 1, "µs": 1e3, "ms": 1e6, "s": 1e9}


def test_a_kernel_named_script_renders_as_text(
    module_server: Server, page: Page, page_errors: PageErrors, artifacts: Path
) -> None:
    events = [step(1, 0, 1_000), memory(1, 1_000_000, 2_000_000, 1)]
    events += [kernel(SCRIPT_NAME, 10, 400), kernel("plain_kernel", 500, 100)]
    tid = _upload_id(module_server, document(events), "hostile.json")
    page.goto(f"{module_server.base_url}/traces/{tid}?tab=kernels")
    cell = page.locator(KERNEL_LABELS).first
    expect(cell).to_contain_text("<script>", timeout=TIMEOUT_MS)
    expect(page.locator("#trace-kernels-top-chart .ytick text").first).to_contain_text("<script>")
    page.goto(f"{module_server.base_url}/traces/{tid}")
    expect(page.locator("#trace-detail-kernels-table .kernel-name").first).to_contain_text(
        "<script>"
    )
    assert page.evaluate("window.__pwned") is None
    page.screenshot(path=artifacts / "trace_views_script_name.png", full_page=True)
    assert page_errors.messages == []


VENDOR = [
    pytest.param("nsys_sqlite", CORPUS / "nsys2025.3_small.sqlite", id="nsys"),
    pytest.param("ncu_csv", CORPUS / "ncu2025.3_roofline_raw.csv", id="ncu"),
]


@pytest.mark.parametrize(("fmt", "path"), VENDOR)
def test_vendor_trace_tabs(
    fmt: str,
    path: Path,
    module_server: Server,
    page: Page,
    page_errors: PageErrors,
    artifacts: Path,
) -> None:
    if fmt not in {str(f) for f in SUPPORTED_FORMATS}:
        pytest.skip(f"{fmt} is not in ingest.registry.SUPPORTED_FORMATS yet")
    if not path.exists():
        pytest.skip(f"{path} is not present (../shared/corpus)")
    base = module_server.base_url
    tid = _upload_id(module_server, path.read_bytes(), path.name)
    page.goto(f"{base}/traces/{tid}")
    expect(page.locator("#trace-detail-kernels-chart .bars .point path").first).to_be_visible()
    page.screenshot(path=artifacts / f"trace_views_{fmt}_overview.png", full_page=True)
    page.goto(f"{base}/traces/{tid}?tab=kernels")
    expect(page.locator(KERNEL_LABELS).first).to_be_visible()
    page.screenshot(path=artifacts / f"trace_views_{fmt}_kernels.png", full_page=True)
    page.goto(f"{base}/traces/{tid}?tab=roofline")
    expect(page.locator("#trace-roofline-chart .main-svg").first).to_be_attached()
    if fmt == "ncu_csv":
        expect(page.locator("#trace-roofline-note")).to_contain_text("Measured")
        assert _points(page, "trace-roofline-chart") > 0
    page.screenshot(path=artifacts / f"trace_views_{fmt}_roofline.png", full_page=True)
    page.goto(f"{base}/traces/{tid}?tab=memory")
    expect(page.locator("#trace-memory-chart .main-svg").first).to_be_attached()
    page.screenshot(path=artifacts / f"trace_views_{fmt}_memory.png", full_page=True)
    assert page_errors.messages == []
