"""Timeline UI benchmark (issue #19): the canvas timeline against the Plotly one it
replaces, both in real headless Chromium, on the same 1M-event trace in the same run.

Targets (docs/PERFORMANCE.md): first paint under 1.5 s with a warm cache; `setRange` over
20 random windows, from the call to fully drawn (data fetch included), p95 under 100 ms;
a cached zoom step (prefetched) under 16 ms to draw.

Canvas (this checkout), through its test hook `window.perfdashTimeline`:
1. first paint: one warm-up visit, then --visits visits; `page.goto` start until the hook
   exists (it appears after the first full draw);
2. --windows random windows (seeded; widths log-uniform from 20 µs to the whole trace):
   `setRange(...).ms`, each from a state where the window is not cached (checked with
   `isCached`; a window that is gets a fresh page opened on a 20 µs view far from it),
   once the page has no request in flight (prefetches, counter tracks);
   each also records its columns fetch (resource timing) to split server from client;
3. cached zoom step: --zooms windows, each drawn and its prefetches finished, then one W
   press (0.8x around the centre) through `setRange`, which must be cached beforehand;
   and `drawNow()` over 20 redraws of the densest view of step 2.

Plotly (git ref --baseline-ref, main before #19): the same trace ingested by the baseline
code into its own data dir, served from a detached worktree of that ref, and measured by
that ref's own `perf/bench_timeline.py` `browser()` (first paint: bars drawn; zoom round
trip: a drag-select until `#timeline-status` changes; medians of 3). Every ingest and the
baseline run as child processes of their own checkout, so each side's code is what runs.

Prints one JSON result and writes it to perf/results/timeline_ui_<date>.json.

Usage: .venv/bin/python perf/bench_timeline_ui.py [--events 1000000] [--visits 5]
           [--windows 20] [--zooms 20] [--seed 19] [--baseline-ref c865641] [--skip-baseline]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _bench import free_port, stop_process_group
from bench_timeline import synthesize

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROME_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
VIEWPORT = {"width": 1500, "height": 900}
MIN_WINDOW_NS = 20_000
ZOOM_STEP = 0.8  # one W press (main.js ZOOM_STEP)
REDRAWS = 20
TIMEOUT_MS = 120_000

_INGEST = """
import json, sys
from pathlib import Path
sys.path.insert(0, "perf")
from _bench import ingest_here
trace_id, seconds = ingest_here(Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]))
print(json.dumps({"trace_id": trace_id, "seconds": seconds}))
"""

_BASELINE_BROWSE = """
import json, sys
from pathlib import Path
sys.path.insert(0, "perf")
from bench_timeline import browser
print(json.dumps(browser(Path(sys.argv[1]), sys.argv[2])))
"""

# Until nothing is fetched or queued: windows, prefetches and the counter tracks.
_SETTLE = """async () => { await window.perfdashTimeline.idle(); return 0; }"""


# setRange, with the window's own columns fetches (resource timing, cleared before).
_SET_RANGE = """async ([s, e]) => {
  performance.setResourceTimingBufferSize(100000);
  performance.clearResourceTimings();
  const t = performance.now();
  const r = await window.perfdashTimeline.setRange(s, e);
  const done = performance.now();
  const fetches = performance.getEntriesByType("resource")
    .filter((x) => x.name.includes("/timeline/columns") && x.responseEnd <= done)
    .map((x) => ({ ms: x.responseEnd - x.startTime, bytes: x.encodedBodySize }));
  return { ...r, fetches, fetch_ms: fetches.reduce((a, x) => a + x.ms, 0) };
}"""


def child_json(checkout: Path, code: str, *args: str) -> dict[str, Any]:
    """Run `code` with this interpreter in `checkout` (its own code first on the path);
    its last stdout line is the JSON result."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PERFDASH_")}
    env["PYTHONPATH"] = str(checkout)
    proc = subprocess.run([sys.executable, "-c", code, *args], cwd=checkout, env=env,
                          capture_output=True, text=True, check=False)  # fmt: skip
    if proc.returncode != 0:
        raise SystemExit(f"child in {checkout} failed:\n{proc.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def ingest(checkout: Path, trace: Path, data_dir: Path) -> dict[str, Any]:
    """`checkout`'s own `ingest_here` into a fresh SQLite database in `data_dir` (where
    `perfdash serve` looks by default)."""
    data_dir.mkdir(parents=True)
    url = f"sqlite:///{data_dir / 'perfdash.db'}"
    return child_json(checkout, _INGEST, str(trace), url, str(data_dir))


def serve(data_dir: Path) -> tuple[subprocess.Popen[bytes], str]:
    """`perfdash serve` of this checkout on `data_dir` (as bench_timeline.browser does)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PERFDASH_")}
    env["PERFDASH_DATA_DIR"] = str(data_dir)
    port = free_port()
    cmd = [sys.executable, "-m", "workers.cli", "serve", "--port", str(port), "--no-worker",
           "--no-samples"]  # fmt: skip
    log = (data_dir / "serve.log").open("wb")
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, start_new_session=True,
                            stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    import httpx

    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            if httpx.get(base + "/healthz", timeout=2).status_code == 200:
                return proc, base
        except httpx.HTTPError:
            pass
        if proc.poll() is not None:
            break
        time.sleep(0.3)
    stop_process_group(proc)
    raise SystemExit(f"perfdash serve did not start; see {data_dir / 'serve.log'}")


def quantiles(values: list[float]) -> dict[str, float]:
    """p50 / p95 (nearest rank) / max, in the values' unit, rounded to 0.1."""
    v = sorted(values)
    p95 = v[max(0, math.ceil(0.95 * len(v)) - 1)]
    return {"p50": round(statistics.median(v), 1), "p95": round(p95, 1), "max": round(v[-1], 1)}


def random_windows(rng: random.Random, t0: int, t1: int, n: int) -> list[tuple[int, int]]:
    """`n` windows, widths log-uniform from 20 µs to the whole trace, random positions."""
    out = []
    for _ in range(n):
        width = round(math.exp(rng.uniform(math.log(MIN_WINDOW_NS), math.log(t1 - t0))))
        start = rng.randint(t0, t1 - width)
        out.append((start, start + width))
    return out


class Canvas:
    """One Chromium page on the canvas timeline, driven through `window.perfdashTimeline`."""

    def __init__(self, page: Any, url: str) -> None:
        self.page, self.url = page, url
        self.inflight: set[Any] = set()
        self.last_activity = time.monotonic()
        page.on("request", self._started)
        page.on("requestfinished", self._ended)
        page.on("requestfailed", self._ended)

    def _started(self, request: Any) -> None:
        self.inflight.add(request)
        self.last_activity = time.monotonic()

    def _ended(self, request: Any) -> None:
        self.inflight.discard(request)
        self.last_activity = time.monotonic()

    def visit(self, query: str = "") -> tuple[float, float]:
        """Open the page; (seconds from `goto` to the hook, the page's own ms from
        navigation start to the hook)."""
        t = time.perf_counter()
        self.page.goto(self.url + query)
        handle = self.page.wait_for_function(
            "() => window.perfdashTimeline ? performance.now() : null", timeout=TIMEOUT_MS
        )
        return time.perf_counter() - t, float(handle.json_value())

    def call(self, expr: str, *args: Any) -> Any:
        return self.page.evaluate(f"(a) => window.perfdashTimeline.{expr}", list(args))

    def settle(self, quiet_s: float = 0.25) -> None:
        """Until the window cache fetches nothing, then until the page has had no request
        in flight for `quiet_s` (the counter tracks are fetched 120 ms after a move)."""
        self.page.evaluate(_SETTLE)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if not self.inflight and time.monotonic() - self.last_activity >= quiet_s:
                return
            self.page.wait_for_timeout(25)

    def set_range(self, s: int, e: int) -> dict[str, Any]:
        """`setRange`'s result, plus the columns fetches that finished before it resolved
        (the browser's resource timing: request start to response end) and their sum."""
        out: dict[str, Any] = self.page.evaluate(_SET_RANGE, [str(s), str(e)])
        return out

    def cached(self, s: int, e: int) -> bool:
        return bool(self.call("isCached(a[0], a[1])", str(s), str(e)))


def first_paint(c: Canvas, visits: int) -> dict[str, Any]:
    c.visit()  # warm-up: the bundles, the server's first requests
    runs = [c.visit() for _ in range(visits)]
    wall = [round(r[0] * 1000, 1) for r in runs]
    page = [round(r[1], 1) for r in runs]
    return {"median_ms": round(statistics.median(wall), 1), "runs_ms": wall,
            "page_median_ms": round(statistics.median(page), 1), "page_runs_ms": page,
            "target_ms": 1500, "met": statistics.median(wall) < 1500}  # fmt: skip


def far_window(s: int, e: int, t0: int, t1: int) -> str:
    """A 20 µs view at the trace's other end, as the page's query: a fresh page there holds
    nothing that serves [s, e)."""
    at = t1 - 2 * MIN_WINDOW_NS if (s + e) / 2 < (t0 + t1) / 2 else t0 + MIN_WINDOW_NS
    return f"?start_ns={at}&end_ns={at + MIN_WINDOW_NS}"


def uncached_windows(c: Canvas, wins: list[tuple[int, int]], t0: int, t1: int) -> dict[str, Any]:
    runs, resets, problems = [], 0, []
    for s, e in wins:
        c.settle()
        if c.cached(s, e):
            resets += 1
            c.visit(far_window(s, e, t0, t1))
            c.settle()
            if c.cached(s, e):
                problems.append(f"[{s}, {e}) cached even on a fresh page at the far end")
        r = c.set_range(s, e)
        seen = c.call("visibleRange()")
        if (int(seen["startNs"]), int(seen["endNs"])) != (s, e):
            problems.append(f"asked [{s}, {e}), view is [{seen['startNs']}, {seen['endNs']})")
        stats = c.call("stats()")
        runs.append({"width_ns": e - s, "start_ns": str(s), "ms": round(r["ms"], 1),
                     "fetch_ms": round(r["fetch_ms"], 1), "fetches": len(r["fetches"]),
                     "bytes": sum(f["bytes"] for f in r["fetches"]),
                     "slices": r["slices"], "labels": r["labels"],
                     "mode": stats["mode"]})  # fmt: skip
    ms = [r["ms"] for r in runs]
    return {"ms": quantiles(ms), "target_p95_ms": 100, "met": quantiles(ms)["p95"] < 100,
            "fetch_ms": quantiles([r["fetch_ms"] for r in runs]),
            "after_fetch_ms": quantiles([r["ms"] - r["fetch_ms"] for r in runs]),
            "slices": quantiles([r["slices"] for r in runs]),
            "labels": quantiles([r["labels"] for r in runs]),
            "fresh_pages_needed": resets, "problems": problems, "runs": runs}  # fmt: skip


def zoom_steps(c: Canvas, wins: list[tuple[int, int]]) -> dict[str, Any]:
    """One W press after each window is drawn and its prefetches are done. A press whose
    window was not cached beforehand is a miss of the prefetch, listed apart: the target
    is for the cached ones."""
    runs = []
    for s, e in wins:
        window_cached = c.cached(s, e)
        c.set_range(s, e)
        mode = c.call("stats()")["mode"]
        c.settle()
        mid, half = (s + e) // 2, round((e - s) * ZOOM_STEP / 2)
        zs, ze = mid - half, mid + half
        was_cached = c.cached(zs, ze)
        r = c.set_range(zs, ze)
        runs.append({"width_ns": ze - zs, "start_ns": str(zs), "cached_before": was_cached,
                     "window_was_cached": window_cached, "window_mode": mode,
                     "ms": round(r["ms"], 2), "slices": r["slices"],
                     "labels": r["labels"]})  # fmt: skip
    hits = [r["ms"] for r in runs if r["cached_before"]]
    misses = [r for r in runs if not r["cached_before"]]
    return {"ms_cached": quantiles(hits), "ms_all": quantiles([r["ms"] for r in runs]),
            "target_ms": 16, "met": quantiles(hits)["max"] < 16,
            "all_cached_before": not misses, "not_cached_before": len(misses),
            "runs": runs}  # fmt: skip


def redraws(c: Canvas, s: int, e: int) -> dict[str, Any]:
    c.set_range(s, e)
    c.settle()
    runs = [c.call("drawNow()") for _ in range(REDRAWS)]
    return {"view_width_ns": e - s, "start_ns": str(s), "slices": runs[0]["slices"],
            "labels": runs[0]["labels"], "ms": quantiles([r["ms"] for r in runs]),
            "runs_ms": [round(r["ms"], 2) for r in runs]}  # fmt: skip


def canvas_bench(data_dir: Path, trace_id: str, args: argparse.Namespace) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    proc, base = serve(data_dir)
    errors: list[str] = []
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROME_ARGS)
            page = browser.new_page(viewport=VIEWPORT)
            page.set_default_timeout(TIMEOUT_MS)
            page.on("pageerror", lambda err: errors.append(str(err)))
            c = Canvas(page, f"{base}/traces/{trace_id}/timeline")
            out: dict[str, Any] = {"chromium": browser.version}
            out["first_paint"] = first_paint(c, args.visits)
            r = c.call("visibleRange()")
            t0, t1 = int(r["traceStartNs"]), int(r["traceEndNs"])
            out["trace_span_ns"] = t1 - t0
            rng = random.Random(args.seed)
            wins = random_windows(rng, t0, t1, args.windows)
            out["set_range"] = uncached_windows(c, wins, t0, t1)
            out["zoom_step"] = zoom_steps(c, random_windows(rng, t0, t1, args.zooms))
            dense = max(out["set_range"]["runs"], key=lambda w: w["slices"])
            ds = int(dense["start_ns"])
            out["redraw_dense"] = redraws(c, ds, ds + dense["width_ns"])
            out["redraw_full"] = redraws(c, t0, t1)
            browser.close()
    finally:
        stop_process_group(proc)
    out["page_errors"] = errors
    return out


def baseline_bench(ref: str, trace: Path, tmp: Path) -> dict[str, Any]:
    """The Plotly timeline of `ref`: its own ingest, server and `browser()` measurement."""
    tree = tmp / "baseline"
    sha = git("rev-parse", ref)
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(tree), sha],
                   check=True, capture_output=True)  # fmt: skip
    try:
        data_dir = tmp / "baseline-data"
        ing = ingest(tree, trace, data_dir)
        print(f"[plotly] ingest {ing['seconds']:.1f} s", file=sys.stderr, flush=True)
        got = child_json(tree, _BASELINE_BROWSE, str(data_dir), ing["trace_id"])
    finally:
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)],
                       check=False, capture_output=True)  # fmt: skip
    return {"ref": ref, "commit": sha, "ingest_s": round(ing["seconds"], 1),
            "first_paint_ms": round(got["first_paint_s"] * 1000, 1),
            "zoom_round_trip_ms": round(got["zoom_round_trip_s"] * 1000, 1),
            "method": "that ref's perf/bench_timeline.py browser(): viewport 1280x900, "
                      "Chromium --no-sandbox --disable-gpu, medians of 3 after a warm-up",
            }  # fmt: skip


def git(*args: str) -> str:
    """`git -C REPO *args`'s output."""
    cmd = ["git", "-C", str(REPO), *args]
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip()


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def main() -> None:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--visits", type=int, default=5)
    parser.add_argument("--windows", type=int, default=20)
    parser.add_argument("--zooms", type=int, default=20)
    parser.add_argument("--seed", type=int, default=19)
    parser.add_argument("--baseline-ref", default="c865641")
    parser.add_argument("--skip-baseline", action="store_true")
    args = parser.parse_args()
    started = dt.datetime.now(dt.UTC)
    result: dict[str, Any] = {
        "date": started.isoformat(timespec="seconds"),
        "commit": git("rev-parse", "HEAD"),
        "machine": {"nproc": os.cpu_count(), "loadavg_start": load()},
        "args": vars(args),
    }
    tmp = Path(tempfile.mkdtemp(prefix="bench-timeline-ui-"))
    try:
        trace = tmp / "gpt_repeated.pt.trace.json.gz"
        result["events"] = synthesize(args.events, trace)
        print(f"synthesized {result['events']:,} events", file=sys.stderr, flush=True)
        ing = ingest(REPO, trace, tmp / "canvas-data")
        print(f"[canvas] ingest {ing['seconds']:.1f} s", file=sys.stderr, flush=True)
        canvas = canvas_bench(tmp / "canvas-data", ing["trace_id"], args)
        canvas["ingest_s"] = round(ing["seconds"], 1)
        result["canvas"] = canvas
        print(f"[canvas] done; load {load()}", file=sys.stderr, flush=True)
        if not args.skip_baseline:
            plotly = baseline_bench(args.baseline_ref, trace, tmp)
            result["plotly"] = plotly
            result["ratios"] = {
                "first_paint_plotly_over_canvas": round(
                    plotly["first_paint_ms"] / canvas["first_paint"]["median_ms"], 2),
                "zoom_plotly_round_trip_over_canvas_set_range_p50": round(
                    plotly["zoom_round_trip_ms"] / canvas["set_range"]["ms"]["p50"], 2),
            }  # fmt: skip
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    result["machine"]["loadavg_end"] = load()
    result["seconds"] = round((dt.datetime.now(dt.UTC) - started).total_seconds())
    text = json.dumps(result, indent=1)
    out = REPO / "perf" / "results" / f"timeline_ui_{started.date().isoformat()}.json"
    out.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
