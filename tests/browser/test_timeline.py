"""The canvas timeline as a user drives it, in headless Chromium on real traces, checked
against the raw trace files (parsed here, not by perfdash): names drawn, nesting,
launch flows, the merged mix of a DDP rank, keyboard zoom and pan, the URL, search
stepping and the area selection. Screenshots go to `test-artifacts/`.

The page's test hook `window.perfdashTimeline` says what was drawn (`slicesInView`,
`summaries`, `stats`); the assertions compare that with the file.
"""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from collections import defaultdict
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import upload_and_wait

if TYPE_CHECKING:
    from tests.browser.conftest import PageErrors, Server

pytestmark = [pytest.mark.browser, pytest.mark.integration]

DATA = Path(__file__).resolve().parents[1] / "data"
GPT = DATA / "torch" / "h200_gpt_small.pt.trace.json.gz"
DDP = [DATA / "ddp" / f"ddp_rank{r}.pt.trace.json.gz" for r in (0, 1)]
HOOK = "window.perfdashTimeline"
CPU_CATS = ("cpu_op", "cuda_runtime", "cuda_driver")  # the kinds a CPU thread's lane draws


def _raw(path: Path) -> list[dict[str, Any]]:
    """The file's events, `ts` and `dur` as exact epoch / plain ns ints (`ts_ns`, `dur_ns`):
    Kineto writes µs with three decimals relative to `baseTimeNanoseconds`."""
    doc = json.loads(gzip.decompress(path.read_bytes()), parse_float=Decimal)
    base = int(doc.get("baseTimeNanoseconds", 0))
    events = [e for e in doc["traceEvents"] if isinstance(e, dict)]
    for e in events:
        if "ts" in e:
            e["ts_ns"] = base + int(Decimal(e["ts"]) * 1000)
            e["dur_ns"] = int(Decimal(e.get("dur", 0)) * 1000)
    return events


@pytest.fixture(scope="module")
def gpt(module_server: Server) -> str:
    return str(upload_and_wait(module_server, GPT.read_bytes(), GPT.name)["id"])


@pytest.fixture(scope="module")
def ddp(module_server: Server) -> str:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for path in DDP:
            tf.add(path, f"run/{path.name}")
    return str(upload_and_wait(module_server, buf.getvalue(), "ddp.tar.gz")["id"])


def _open(page: Page, server: Server, trace_id: str, query: str = "") -> dict[str, str]:
    page.goto(f"{server.base_url}/traces/{trace_id}/timeline{query}")
    page.wait_for_function(f"{HOOK} && {HOOK}.ready", timeout=30_000)
    return dict(page.evaluate(f"{HOOK}.visibleRange()"))


def _set_range(page: Page, start: int, end: int) -> dict[str, Any]:
    return dict(page.evaluate(f"([s, e]) => {HOOK}.setRange(s, e)", [str(start), str(end)]))


def _cpu_depths(events: list[dict[str, Any]]) -> dict[tuple[str, int], int]:
    """Nesting depth of every CPU event per thread, by a stack over (start, longest first):
    {(name, start ns): depth}."""
    by_thread: dict[Any, list[tuple[int, int, str]]] = defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in CPU_CATS:
            start = e["ts_ns"]
            by_thread[(e["pid"], e["tid"])].append((start, start + e["dur_ns"], e["name"]))
    depths = {}
    for rows in by_thread.values():
        stack: list[int] = []
        for start, end, name in sorted(rows, key=lambda r: (r[0], -r[1])):
            while stack and stack[-1] <= start:
                stack.pop()
            depths[(name, start)] = len(stack)
            stack.append(end)
    return depths


def test_zoomed_in_slices_carry_names_and_nest_as_in_the_file(
    module_server: Server, gpt: str, page: Page, page_errors: PageErrors, artifacts: Path
) -> None:
    raw = _raw(GPT)
    depths = _cpu_depths(raw)
    deepest = max(depths.items(), key=lambda kv: kv[1])
    (_, at), _depth = deepest
    spans = [(e["ts_ns"], e["ts_ns"] + e["dur_ns"]) for e in raw if e.get("ph") == "X"]
    half = 20_000
    while sum(1 for a, b in spans if a < at + half and b > at - half) < 300:
        half *= 2  # a window of a few hundred slices around the deepest nesting
    r = _open(page, module_server, gpt)
    page.screenshot(path=artifacts / "timeline_full.png", full_page=True)
    drawn = _set_range(page, at - half, at + half)
    slices = page.evaluate(f"{HOOK}.slicesInView()")
    assert 150 <= drawn["slices"] <= 1500, drawn
    wide = [s for s in slices if s["px"] >= 40]
    assert len(wide) >= 5 and drawn["labels"] >= len(wide), drawn
    assert all(s["labelled"] for s in wide), [s["name"] for s in wide if not s["labelled"]]
    t0 = int(r["traceStartNs"])
    cpu = [s for s in slices if s["id"] >= 0 and s["category"] in ("cpu_op", "runtime")]
    assert cpu, "no CPU slices drawn"
    for s in cpu:
        key = (s["name"], t0 + round(s["start"]))
        assert key in depths, f"{key} is not an event of the file"
        assert s["depth"] == depths[key], (key, s["depth"], depths[key])
    assert max(s["depth"] for s in cpu) >= 3  # four rows or more on the thread
    page.screenshot(path=artifacts / "timeline_nested.png", full_page=True)
    assert page_errors.messages == []


def test_selecting_a_kernel_draws_its_launch_flow(
    module_server: Server, gpt: str, page: Page, page_errors: PageErrors, artifacts: Path
) -> None:
    raw = _raw(GPT)
    kernels = sorted((e for e in raw if e.get("cat") == "kernel"), key=lambda e: -e["dur"])
    kernel = kernels[0]
    corr = kernel["args"]["correlation"]
    launch = next(e for e in raw if e.get("cat") == "cuda_runtime"
                  and e.get("args", {}).get("correlation") == corr)  # fmt: skip
    start = kernel["ts_ns"]
    r = _open(page, module_server, gpt)
    lo = min(start, launch["ts_ns"]) - 20_000
    _set_range(page, lo, start + kernel["dur_ns"] + 20_000)
    drawn = page.evaluate(f"{HOOK}.slicesInView()")
    t0 = int(r["traceStartNs"])
    ids = [
        s["id"] for s in drawn if s["name"] == kernel["name"] and t0 + round(s["start"]) == start
    ]
    assert len(ids) == 1, "the widest kernel is not drawn"
    selected = page.evaluate(f"id => {HOOK}.select(id)", ids[0])
    assert selected["flows"] >= 1, selected
    details = page.locator(".pdt-details")
    expect(details).to_contain_text(kernel["name"][:40])
    expect(details.locator("tr", has_text="Launched by")).to_contain_text(launch["name"])
    page.screenshot(path=artifacts / "timeline_flow.png", full_page=True)

    # Follow the launch: the runtime call becomes the selection, its flow drawn to the kernel.
    details.locator("tr", has_text="Launched by").locator("a").click()
    expect(page.locator(".pdt-details")).to_contain_text(launch["name"], timeout=10_000)
    expect(page.locator(".pdt-details")).to_contain_text("Flows")
    assert page_errors.messages == []


def test_a_zoomed_out_ddp_rank_shows_its_compute_and_communication_mix(
    module_server: Server, ddp: str, page: Page, page_errors: PageErrors, artifacts: Path
) -> None:
    """Each rank's GPU header sums its streams by category; over the whole trace that is
    every kernel's time, which the rank's own file gives."""
    expected: dict[int, dict[str, int]] = {}
    for rank, path in enumerate(DDP):
        sums = {"compute": 0, "communication": 0}
        for e in _raw(path):
            if e.get("cat") == "kernel":
                which = "communication" if "nccl" in e["name"].lower() else "compute"
                sums[which] += e["dur_ns"]
        expected[rank] = sums
    _open(page, module_server, ddp)
    stats = page.evaluate(f"{HOOK}.stats()")
    summaries = page.evaluate(f"{HOOK}.summaries()")
    page.screenshot(path=artifacts / "timeline_ddp_mix.png", full_page=True)
    assert stats["mode"] == "blocks" or stats["slices"] > 0
    assert {s["rank"] for s in summaries} == {0, 1}
    for s in summaries:
        want = expected[s["rank"]]
        for category in ("compute", "communication"):
            got = s["totals"][category]
            assert abs(got - want[category]) <= 0.001 * want[category] + 1_000, (s, want)
        assert s["totals"]["communication"] > 0 and s["totals"]["compute"] > 0
    assert page_errors.messages == []


def test_keys_zoom_and_pan_and_the_url_reproduces_the_view(
    module_server: Server, gpt: str, page: Page, page_errors: PageErrors
) -> None:
    r = _open(page, module_server, gpt)
    t0, t1 = int(r["traceStartNs"]), int(r["traceEndNs"])
    width = (t1 - t0) // 4
    _set_range(page, t0 + width, t0 + 2 * width)

    def view() -> tuple[int, int]:
        v = page.evaluate(f"{HOOK}.visibleRange()")
        return int(v["startNs"]), int(v["endNs"])

    def press(key: str, check: Any) -> None:
        before = view()
        page.keyboard.press(key)
        page.wait_for_function(
            f"b => {HOOK}.visibleRange().startNs !== b", arg=str(before[0]), timeout=10_000
        )
        after = view()
        check(before, after)

    def zoomed(factor: float) -> Any:
        def check(b: tuple[int, int], a: tuple[int, int]) -> None:
            assert abs((a[1] - a[0]) / (b[1] - b[0]) - factor) < 0.01, (b, a)
            assert abs((a[0] + a[1]) / 2 - (b[0] + b[1]) / 2) <= 2  # around the centre

        return check

    def panned(fraction: float) -> Any:
        def check(b: tuple[int, int], a: tuple[int, int]) -> None:
            assert abs((a[0] - b[0]) / (b[1] - b[0]) - fraction) < 0.01, (b, a)
            assert abs((a[1] - a[0]) - (b[1] - b[0])) <= 2

        return check

    page.locator(".pdt-canvas").focus()
    press("w", zoomed(0.8))
    press("s", zoomed(1.25))
    press("d", panned(0.2))
    press("a", panned(-0.2))
    shown = view()
    page.wait_for_url(lambda url: f"start_ns={shown[0]}" in url and f"end_ns={shown[1]}" in url)
    _open(page, module_server, gpt, page.url[page.url.index("?") :])
    assert view() == shown
    assert page_errors.messages == []


def test_search_highlights_and_steps_through_matches(
    module_server: Server, gpt: str, page: Page, page_errors: PageErrors, artifacts: Path
) -> None:
    raw = _raw(GPT)
    names = [e["name"] for e in raw if e.get("ph") == "X" and "nvjet" in e["name"].lower()]
    r = _open(page, module_server, gpt)
    t0 = int(r["traceStartNs"])
    box = page.locator(".pdt-search")
    box.fill("nvjet")
    box.press("Enter")
    info = page.locator(".pdt-match-info")
    expect(info).to_contain_text(f"1 / {len(names):,} matches", timeout=15_000)
    details = page.locator(".pdt-details")
    expect(details).to_contain_text("nvjet")
    first = page.evaluate(f"{HOOK}.visibleRange()")
    box.press("Enter")
    expect(info).to_contain_text(f"2 / {len(names):,}")
    box.press("Shift+Enter")
    expect(info).to_contain_text(f"1 / {len(names):,}")
    box.press("Shift+Enter")  # before the first: the last match
    expect(info).to_contain_text(f"{len(names):,} / {len(names):,}")
    starts = sorted(e["ts_ns"] for e in raw if e.get("ph") == "X" and "nvjet" in e["name"].lower())
    v = page.evaluate(f"{HOOK}.visibleRange()")
    mid = (int(v["startNs"]) + int(v["endNs"])) // 2
    assert int(v["startNs"]) <= starts[-1] <= int(v["endNs"]), (v, starts[-1])
    assert int(first["startNs"]) <= starts[0] <= int(first["endNs"])
    assert mid > t0
    page.screenshot(path=artifacts / "timeline_search.png", full_page=True)
    assert page_errors.messages == []


def test_the_area_selection_table_sums_the_range(
    module_server: Server, gpt: str, page: Page, page_errors: PageErrors, artifacts: Path
) -> None:
    """A drag across the time axis: time per name clipped to the range, as the file says."""
    raw = _raw(GPT)
    r = _open(page, module_server, gpt)
    t0, t1 = int(r["traceStartNs"]), int(r["traceEndNs"])
    canvas = page.locator(".pdt-canvas")
    box = canvas.bounding_box()
    assert box is not None
    shell, ruler_y = 260, 30 + 12  # the track shell's width; the ruler under the overview
    x0, x1 = box["x"] + shell + 200, box["x"] + shell + 500
    page.mouse.move(x0, box["y"] + ruler_y)
    page.mouse.down()
    page.mouse.move(x1, box["y"] + ruler_y, steps=5)
    page.mouse.up()
    table = page.locator(".pdt-area table").first
    expect(table.locator("tbody tr").first).to_be_visible(timeout=15_000)
    page.screenshot(path=artifacts / "timeline_area.png", full_page=True)
    area = page.evaluate(f"{HOOK}.lastArea()")
    lo, hi = int(area["start_ns"]), int(area["end_ns"])
    assert t0 < lo < hi < t1
    kernels: dict[str, int] = defaultdict(int)
    for e in raw:
        if e.get("cat") == "kernel":
            s, d = e["ts_ns"], e["dur_ns"]
            clipped = min(s + d, hi) - max(s, lo)
            if clipped > 0:
                kernels[e["name"]] += clipped
    got = {n["name"]: n["total_ns"] for n in area["names"] if n["category"] == "compute"}
    top = sorted(kernels, key=lambda n: -kernels[n])[:5]
    for name in top:
        assert abs(got[name] - kernels[name]) <= 5, (name, got.get(name), kernels[name])
    # The table sorts by a clicked column.
    table.locator("th", has_text="Occurrences").click()
    counts = [
        int(c.replace(",", "")) for c in table.locator("tbody tr td:nth-child(6)").all_inner_texts()
    ]
    assert counts == sorted(counts, reverse=True)
    assert page_errors.messages == []


def test_a_gap_row_moves_the_canvas_to_the_gap(
    module_server: Server, gpt: str, page: Page, page_errors: PageErrors
) -> None:
    gaps = httpx.get(
        f"{module_server.base_url}/api/v1/traces/{gpt}/timeline/gaps",
        params={"min_ns": 100_000, "limit": 20},
    ).json()["items"]
    _open(page, module_server, gpt)
    page.locator(".timeline-gaps button").first.click()
    gap = gaps[0]
    page.wait_for_function(
        f"""([s, e]) => {{ const r = {HOOK}.visibleRange();
            return BigInt(r.startNs) <= BigInt(s) && BigInt(r.endNs) >= BigInt(e)
                && BigInt(r.endNs) - BigInt(r.startNs) < 10n * (BigInt(e) - BigInt(s)); }}""",
        arg=[str(gap["start_ns"] + 1000), str(gap["end_ns"] - 1000)],
        timeout=10_000,
    )
    assert page_errors.messages == []


def test_open_in_perfetto_says_how_next_to_the_download(
    module_server: Server, gpt: str, page: Page, page_errors: PageErrors, artifacts: Path
) -> None:
    _open(page, module_server, gpt)
    help_panel = page.locator("#timeline-perfetto")
    expect(help_panel.get_by_role("link", name="ui.perfetto.dev")).to_be_hidden()
    help_panel.locator("summary").click()
    link = help_panel.get_by_role("link", name="ui.perfetto.dev")
    expect(link).to_have_attribute("href", "https://ui.perfetto.dev")
    expect(help_panel).to_contain_text("Open trace file")
    expect(help_panel).to_contain_text("it is not uploaded anywhere")
    download = page.get_by_role("link", name="Download Chrome trace JSON")
    assert download.get_attribute("href") == f"/api/v1/traces/{gpt}/export.json"
    page.screenshot(path=artifacts / "timeline_open_in_perfetto.png")
    assert page_errors.messages == []
