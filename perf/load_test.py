"""Load test (issue 10): browsing, CI pushes and big uploads at once, then count what landed.

Run: `python perf/load_test.py [--clients 50] [--duration 60] [--push-rate 10]
[--points 100] [--uploads 10] [--scale 8]`. Everything is on loopback:
- a fresh database on the PostgreSQL of `--postgres` (dropped afterwards), a private
  redis-server as the broker, and a real `perfdash serve` (API, pages, one ingest worker)
  plus `--workers - 1` more `perfdash worker` processes;
- browse traces: the 246k-event H200 GPT trace and the two sample traces, ingested first;
- what a browser fetches for a trace page is recorded once per view (overview, kernels tab,
  timeline page of each browse trace) by Chromium: the page, `/_dash-layout`,
  `/_dash-dependencies` and each `/_dash-update-component` callback (whose handlers read the
  API server-side); static bundles are left out, as a browser caches them. `--clients`
  clients then replay random views, request after request, with a think time between views;
- a CI client pushes `--push-rate` native documents of `--points` points per second, each a
  new run, through `workers.cli.http_retry` (the `perfdash push` retry policy);
- `--uploads` distinct ~50 MB gzip torch.profiler traces (`perf/load_traces.py`) are
  uploaded evenly over the window, with a `traces:write` token from `perfdash token create`.
Afterwards: latency (p50/p95/p99) and errors per endpoint as the clients saw them, status
codes per route from the server's access log (the callbacks' own API calls included),
points pushed against rows in `metric_points`, and uploads against traces `ready` once
ingest finishes (or `--ingest-timeout` passes).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import psycopg
from _bench import (
    REPO,
    free_port,
    perfdash_env,
    private_redis,
    scratch_postgres,
    stop_process_group,
)
from load_traces import build_copies

from workers.cli.http_retry import send_with_retry

BROWSE = [
    REPO / "perf" / "data" / "h200_gpt_12l.pt.trace.json.gz",
    *sorted((REPO / "backend" / "sample_data").glob("*.pt.trace.json.gz")),
]
VIEWS = ("", "?tab=kernels", "/timeline")
STATIC = ("/_dash-component-suites/", "/assets/", "/_favicon", "/favicon")
CHROMIUM = "/usr/bin/chromium"
DEFAULT_PG = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
HEX_ID = re.compile(r"/[0-9a-f]{32}(?=/|$)")
ACCESS = re.compile(r'"(GET|POST|PUT|PATCH|DELETE) (\S+) HTTP/[\d.]+" (\d{3})')


@dataclass
class Stats:
    """Latencies of answered requests and failures, per endpoint label (thread-safe)."""

    seconds: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    lock: threading.Lock = field(default_factory=threading.Lock)

    def ok(self, label: str, seconds: float) -> None:
        with self.lock:
            self.seconds[label].append(seconds)

    def fail(self, label: str, kind: str) -> None:
        with self.lock:
            self.errors[label][kind] += 1


@dataclass
class Request:
    """One request a browser sent for a view, ready to replay."""

    label: str
    method: str
    path: str
    body: bytes | None
    headers: dict[str, str]


# --- the system under test --------------------------------------------------------------


@contextmanager
def spawn(args: list[str], env: dict[str, str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A `perfdash` command in its own process group, stopped (whole group) on exit."""
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "workers.cli", *args],
            cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    try:
        yield proc
    finally:
        stop_process_group(proc, grace_s=60)


def wait_healthy(base: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"perfdash serve exited:\n{log.read_text()[-3000:]}")
        try:
            if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise SystemExit("perfdash serve did not become healthy in 120 s")


def create_token(env: dict[str, str]) -> str:
    """A token for uploads and pushes, made the way an operator does."""
    scopes = ["--scope", "traces:write", "--scope", "metrics:write"]
    done = subprocess.run(
        [sys.executable, "-m", "workers.cli", "token", "create", *scopes, "--name", "load"],
        cwd=REPO, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"perfdash token create failed:\n{done.stderr}")
    return done.stdout.strip().splitlines()[-1]


def upload(client: httpx.Client, path: Path, token: str) -> httpx.Response:
    with path.open("rb") as f:
        return client.post(
            "/api/v1/traces",
            files={"file": (path.name, f, "application/gzip")},
            headers={"Authorization": f"Bearer {token}"},
        )


def wait_ready(client: httpx.Client, ids: list[str], timeout_s: float) -> dict[str, dict[str, Any]]:
    """Each trace's last state, once all are `ready`/`failed` or the timeout passed."""
    deadline = time.monotonic() + timeout_s
    states: dict[str, dict[str, Any]] = {}
    while True:
        for tid in ids:
            if states.get(tid, {}).get("status") not in ("ready", "failed"):
                states[tid] = client.get(f"/api/v1/traces/{tid}").json()
        if all(s["status"] in ("ready", "failed") for s in states.values()):
            return states
        if time.monotonic() > deadline:
            return states
        if int(time.monotonic()) % 60 < 2:
            say(
                ", ".join(
                    f"{k}: {v}" for k, v in Counter(s["status"] for s in states.values()).items()
                )
            )
        time.sleep(2)


# --- what a browser fetches -------------------------------------------------------------


def _label(method: str, path: str, body: bytes | None) -> str:
    if path.startswith("/_dash-update-component") and body:
        output = str(json.loads(body).get("output", "?")).strip(".")
        return f"callback {output.split('...')[0].split('@')[0][:48]}"
    bare = HEX_ID.sub("/{id}", path.split("?")[0])
    return f"{method} {bare}" if method != "GET" or path.startswith("/_dash") else f"page {bare}"


def _collect(into: list[Any]) -> Any:
    """A request handler appending to `into` (Playwright cannot take a bound builtin)."""

    def handler(request: Any) -> None:
        into.append(request)

    return handler


def record_views(base: str, trace_ids: list[str]) -> list[list[Request]]:
    """Per (trace, view), the non-static requests Chromium sends to open it, in order."""
    from playwright.sync_api import sync_playwright

    views: list[list[Request]] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        for tid in trace_ids:
            for view in VIEWS:
                context = browser.new_context(viewport={"width": 1280, "height": 900})
                page = context.new_page()
                seen: list[Any] = []
                page.on("request", _collect(seen))
                page.goto(f"{base}/traces/{tid}{view}")
                page.wait_for_load_state("networkidle")
                page.wait_for_timeout(1500)  # late chained callbacks
                recorded = []
                for r in seen:
                    path = r.url.removeprefix(base)
                    if not r.url.startswith(base) or path.startswith(STATIC):
                        continue
                    body = r.post_data_buffer
                    keep = {k: v for k, v in r.headers.items() if k.lower().startswith("x-")}
                    if body is not None:
                        keep["content-type"] = r.headers.get("content-type", "application/json")
                    recorded.append(Request(_label(r.method, path, body), r.method, path, body,
                                            keep))  # fmt: skip
                views.append(recorded)
                context.close()
        browser.close()
    return views


async def browse(
    base: str, views: list[list[Request]], stats: Stats, stop_at: float, seed: int,
    think: tuple[float, float],
) -> int:  # fmt: skip
    """One browser-like client: random views until `stop_at`; returns views opened."""
    rng = random.Random(seed)
    opened = 0
    await asyncio.sleep(rng.uniform(0, think[1]))  # users do not all arrive at once
    async with httpx.AsyncClient(base_url=base, timeout=120) as client:
        while time.monotonic() < stop_at:
            for req in rng.choice(views):
                start = time.perf_counter()
                try:
                    r = await client.request(
                        req.method, req.path, content=req.body, headers=req.headers
                    )
                except httpx.HTTPError as e:
                    stats.fail(req.label, type(e).__name__)
                    break
                if r.status_code >= 400:
                    stats.fail(req.label, f"HTTP {r.status_code}")
                elif b"notice-error" in r.content:
                    stats.fail(req.label, "error notice in the page")
                else:
                    stats.ok(req.label, time.perf_counter() - start)
            opened += 1
            await asyncio.sleep(rng.uniform(*think))
    return opened


# --- CI pushes and uploads ----------------------------------------------------------------


def push_document(i: int, points: int) -> dict[str, Any]:
    return {
        "project": "load",
        "benchmark": "ci",
        "run_id": f"load-{i}",
        "commit": f"{i:040x}",
        "branch": "main",
        "points": [
            {"metric": f"m{j:03d}", "unit": "ms", "value": float(i % 97 + j)} for j in range(points)
        ],
    }


def run_pushes(
    base: str, token: str, stats: Stats, rate: float, points: int, duration: float
) -> tuple[int, int]:
    """Open loop: a push every 1/rate s for `duration`, each resent on transient failures.
    Returns (pushes sent, pushes answered 200)."""
    done = Counter[str]()
    headers = {"Authorization": f"Bearer {token}"}

    def one(client: httpx.Client, i: int) -> None:
        start = time.perf_counter()
        try:
            r = send_with_retry(
                client, "POST", "/api/v1/metrics", retries=8,
                json=push_document(i, points), headers=headers,
            )  # fmt: skip
        except httpx.HTTPError as e:
            stats.fail("POST /api/v1/metrics", type(e).__name__)
            return
        if r.status_code == 200:
            stats.ok("POST /api/v1/metrics", time.perf_counter() - start)
            done["ok"] += 1
        else:
            stats.fail("POST /api/v1/metrics", f"HTTP {r.status_code}")

    n = int(rate * duration)
    with (
        httpx.Client(base_url=base, timeout=60) as client,
        ThreadPoolExecutor(max_workers=32) as pool,
    ):
        t0 = time.monotonic()
        for i in range(n):
            time.sleep(max(0.0, t0 + i / rate - time.monotonic()))
            pool.submit(one, client, i)
    return n, done["ok"]


def run_uploads(
    base: str, token: str, stats: Stats, files: list[Path], duration: float
) -> list[str]:
    """One upload every duration/len(files) s, each in its own thread; returns trace ids."""
    ids: list[str] = []

    def one(path: Path) -> None:
        start = time.perf_counter()
        try:
            with httpx.Client(base_url=base, timeout=600) as client:
                r = upload(client, path, token)
        except httpx.HTTPError as e:
            stats.fail("POST /api/v1/traces", type(e).__name__)
            return
        if r.status_code == 202:
            stats.ok("POST /api/v1/traces", time.perf_counter() - start)
            ids.append(str(r.json()["id"]))
        else:
            stats.fail("POST /api/v1/traces", f"HTTP {r.status_code}")

    threads = []
    t0 = time.monotonic()
    for k, path in enumerate(files):
        time.sleep(max(0.0, t0 + k * duration / len(files) - time.monotonic()))
        threads.append(threading.Thread(target=one, args=(path,)))
        threads[-1].start()
    for t in threads:
        t.join()
    return ids


# --- the run ------------------------------------------------------------------------------


def load_sampler(samples: list[float], stop: threading.Event) -> None:
    while not stop.wait(5.0):
        samples.append(os.getloadavg()[0])


def access_log_statuses(log: Path) -> dict[str, Counter[str]]:
    """Status codes per (method, route) from uvicorn's access log lines."""
    out: dict[str, Counter[str]] = defaultdict(Counter)
    for m in ACCESS.finditer(log.read_text(errors="replace")):
        method, path, status = m.groups()
        route = HEX_ID.sub("/{id}", path.split("?")[0])
        route = re.sub(r"/\d+(?=/|$)", "/{n}", route)
        static = next((p for p in STATIC if route.startswith(p)), None)
        route = f"{static.rstrip('/')}/* (static, the recording only)" if static else route
        out[f"{method} {route}"][status] += 1
    return out


def count_rows(database_url: str) -> tuple[int, int]:
    dsn = database_url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "SELECT count(DISTINCT r.id), count(p.id) FROM metric_runs r "
            "JOIN metric_points p ON p.run_id = r.id WHERE r.project = 'load'"
        ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def report(stats: Stats, statuses: dict[str, Counter[str]], facts: list[str]) -> None:
    print("\n".join(facts))
    print("\n| endpoint (as the clients saw it) | requests | errors | p50 ms | p95 ms | p99 ms |")
    print("|---|---:|---:|---:|---:|---:|")
    for label in sorted(set(stats.seconds) | set(stats.errors)):
        lat = stats.seconds.get(label, [])
        errs = stats.errors.get(label, Counter())
        cells = [f"{_pct(lat, q) * 1000:.0f}" if lat else "—" for q in (0.5, 0.95, 0.99)]
        err = sum(errs.values())
        err_text = f"{err} ({', '.join(f'{k}: {v}' for k, v in errs.items())})" if err else "0"
        print(f"| {label} | {len(lat) + err} | {err_text} | {' | '.join(cells)} |")
    print("\n| route (server access log) | requests | statuses |")
    print("|---|---:|---|")
    for route, counts in sorted(statuses.items(), key=lambda kv: -sum(kv[1].values())):
        codes = ", ".join(f"{k}: {v}" for k, v in sorted(counts.items()))
        print(f"| {route} | {sum(counts.values())} | {codes} |")


def say(message: str) -> None:
    """Progress on stderr; the report goes to stdout at the end."""
    print(f"{datetime.now(UTC):%H:%M:%S} {message}", file=sys.stderr, flush=True)


def main() -> None:
    # Ctrl-C or a plain `kill` stops the server, workers and broker and drops the database
    # (a background job's SIGINT may be ignored, and SIGTERM would skip the cleanup).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--duration", type=float, default=60.0)
    ap.add_argument("--think", type=float, nargs=2, default=(2.0, 8.0), metavar=("MIN", "MAX"))
    ap.add_argument("--push-rate", type=float, default=10.0, help="pushes per second")
    ap.add_argument("--points", type=int, default=100, help="points per push")
    ap.add_argument("--uploads", type=int, default=10)
    ap.add_argument("--scale", type=int, default=8, help="upload size, x the 4.4 MB trace")
    ap.add_argument("--workers", type=int, default=2, help="ingest worker processes")
    ap.add_argument("--ingest-timeout", type=float, default=3600.0)
    ap.add_argument("--postgres", default=DEFAULT_PG)
    args = ap.parse_args()

    uploads = build_copies(REPO / "perf" / "data", args.uploads, args.scale)
    stats = Stats()
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="perfdash-load-")))
        database_url = stack.enter_context(scratch_postgres(args.postgres, "load"))
        broker_url = stack.enter_context(private_redis(tmp))
        env = perfdash_env(database_url, tmp / "var") | {"PERFDASH_BROKER_URL": broker_url}
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        serve_log = tmp / "serve.log"
        serve = stack.enter_context(
            spawn(["serve", "--port", str(port), "--no-samples"], env, serve_log)
        )
        wait_healthy(base, serve, serve_log)
        for k in range(1, args.workers):
            worker = ["worker", "--queues", "ingest", "--concurrency", "1"]
            stack.enter_context(spawn(worker, env, tmp / f"worker{k}.log"))
        result = run(args, base, env, uploads, stats, database_url)
        statuses = access_log_statuses(serve_log)
    report(stats, statuses, result)


def run(
    args: argparse.Namespace, base: str, env: dict[str, str], uploads: list[Path],
    stats: Stats, database_url: str,
) -> list[str]:  # fmt: skip
    """Seed, record, load for `duration`, wait for ingest, count; returns the header lines."""
    token = create_token(env)
    say("ingesting the browse traces")
    with httpx.Client(base_url=base, timeout=600) as client:
        seeded = [str(upload(client, p, token).json()["id"]) for p in BROWSE]
        states = wait_ready(client, seeded, 600)
        if any(s["status"] != "ready" for s in states.values()):
            raise SystemExit(f"browse traces did not ingest: {states}")
        base_events = sum(states[seeded[0]]["event_counts"].values())
    say("recording the requests of each view in Chromium")
    views = record_views(base, seeded)
    say(f"load for {args.duration:.0f} s")

    load_before = os.getloadavg()
    loads: list[float] = []
    stop = threading.Event()
    threading.Thread(target=load_sampler, args=(loads, stop), daemon=True).start()
    stop_at = time.monotonic() + args.duration
    pushed: list[tuple[int, int]] = []
    upload_ids: list[list[str]] = []

    async def everything() -> list[int]:
        push = asyncio.to_thread(
            lambda: pushed.append(
                run_pushes(base, token, stats, args.push_rate, args.points, args.duration)
            )
        )
        up = asyncio.to_thread(
            lambda: upload_ids.append(run_uploads(base, token, stats, uploads, args.duration))
        )
        clients = [
            browse(base, views, stats, stop_at, i, tuple(args.think)) for i in range(args.clients)
        ]
        opened = await asyncio.gather(*clients, push, up)
        return [int(o) for o in opened[: args.clients]]

    t0 = time.monotonic()
    opened = asyncio.run(everything())
    window_s = time.monotonic() - t0
    stop.set()
    load_window = list(loads)

    say(f"waiting for {len(upload_ids[0])} uploads to be ingested")
    t_ingest = time.monotonic()
    with httpx.Client(base_url=base, timeout=60) as client:
        final = wait_ready(client, upload_ids[0], args.ingest_timeout)
    ingest_s = time.monotonic() - t_ingest
    runs, stored = count_rows(database_url)
    sent, answered = pushed[0]
    ready = [s for s in final.values() if s["status"] == "ready"]
    counts = sorted({sum(s["event_counts"].values()) for s in ready})
    size_mb = statistics.mean(p.stat().st_size for p in uploads) / 1e6 if uploads else 0.0
    return [
        f"# {datetime.now(UTC):%Y-%m-%d %H:%M} UTC  {platform.node()}  {os.cpu_count()} CPUs  "
        f"python {platform.python_version()}",
        f"load average (1 min): {load_before[0]:.2f} before; during the window "
        f"max {max(load_window, default=0):.2f}, mean "
        f"{statistics.mean(load_window) if load_window else 0:.2f}",
        f"window: {window_s:.1f} s (load {args.duration:.0f} s; the rest is requests in flight)",
        f"browsing: {args.clients} clients, {sum(opened)} trace views opened "
        f"({len(views)} recorded views, {statistics.mean(len(v) for v in views):.1f} requests "
        f"each), think time {args.think[0]:g}-{args.think[1]:g} s",
        f"pushes: {sent} sent ({args.push_rate:g}/s x {args.points} points), {answered} "
        f"answered 200; points pushed {sent * args.points:,}, stored {stored:,} "
        f"in {runs} runs",
        f"uploads: {len(uploads)} of {size_mb:.1f} MB gzip, {len(upload_ids[0])} accepted; "
        f"ready {len(ready)}, failed "
        f"{sum(s['status'] == 'failed' for s in final.values())}, still pending "
        f"{sum(s['status'] not in ('ready', 'failed') for s in final.values())} after "
        f"{ingest_s:.0f} s more; events per trace {counts} "
        f"(expected {base_events * args.scale:,} = {args.scale} x {base_events:,})",
    ]


if __name__ == "__main__":
    main()
