"""`perfdash bench apply|run|list` and `perfdash beat`: benchmark specs from the shell.

`bench` talks to a server over HTTP like `perfdash sla apply`; the token (needed only for
command specs and install hooks, which must come from an admin) is read from an
environment variable. `beat` runs Celery beat, which sends `bench_tick` every minute;
the tick queues the scheduled specs whose cron fired.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

import httpx

EXIT_ERROR = 2
TICK_EVERY_S = 60.0
HTTP_TIMEOUT_S = 60.0  # one request; `bench run --timeout` bounds the whole wait
WAIT_TIMEOUT_S = 600.0
_DONE = ("succeeded", "failed")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `bench` and `beat` to the `perfdash` parser."""
    bench = sub.add_parser("bench", help="benchmark specs and re-runs").add_subparsers(
        required=True, metavar="ACTION"
    )
    apply = bench.add_parser("apply", help="upsert the specs of a YAML file and print the diff")
    apply.add_argument("file", type=Path)
    _server_args(apply)
    apply.set_defaults(handler=_apply)

    run = bench.add_parser("run", help="queue a run of a spec")
    run.add_argument("name")
    run.add_argument("--ref", default="", help="git ref to install the package at")
    run.add_argument(
        "--repeat",
        type=int,
        default=1,
        metavar="N",
        help="queue N runs of the same ref (A/A runs: they teach the series its noise band); "
        "flagged or failed runs are replaced, within PERFDASH_BENCH_AA_EXTRA_RUNS, until N "
        "are usable",
    )
    run.add_argument("--wait", action="store_true", help="wait for the run(s) and print them")
    # The flag's old name, before --timeout bounded the wait (issue 24).
    run.add_argument(
        "--wait-timeout", dest="timeout", type=float, default=WAIT_TIMEOUT_S, help=argparse.SUPPRESS
    )
    _server_args(
        run,
        timeout=WAIT_TIMEOUT_S,
        timeout_help="with --wait, give up (exit 2) if the run has not finished after this "
        f"many seconds (default {WAIT_TIMEOUT_S:.0f})",
    )
    run.set_defaults(handler=_run)

    listing = bench.add_parser("list", help="specs and their last runs")
    _server_args(listing)
    listing.set_defaults(handler=_list)

    beat = sub.add_parser("beat", help="run Celery beat for scheduled benchmark runs")
    beat.set_defaults(handler=_beat)


def _server_args(
    parser: argparse.ArgumentParser,
    *,
    timeout: float = HTTP_TIMEOUT_S,
    timeout_help: str = "seconds one request may take",
) -> None:
    parser.add_argument("--url", default="http://127.0.0.1:8000", help="perfdash server")
    parser.add_argument("--token-env", default="PERFDASH_TOKEN", help="env var with the token")
    parser.add_argument("--timeout", type=float, default=timeout, help=timeout_help)


def _call(args: argparse.Namespace, method: str, path: str, body: Any = None) -> Any:
    token = os.environ.get(args.token_env)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        response = httpx.request(
            method,
            args.url.rstrip("/") + path,
            json=body,
            headers=headers,
            timeout=min(args.timeout, HTTP_TIMEOUT_S),
        )
    except httpx.HTTPError as e:
        raise SystemExit(f"perfdash: cannot reach {args.url}: {e}") from e
    if response.is_error:
        raise SystemExit(f"perfdash: {method} {path}: {response.status_code} {response.text}")
    return response.json()


def load_specs(path: Path) -> list[dict[str, Any]]:
    """The specs of a YAML file (`benchmarks:` list, or a bare list), all validated."""
    import yaml
    from pydantic import ValidationError

    from backend.models.benchmarks import BenchmarkSpecCreate

    loaded = yaml.safe_load(path.read_text())
    items = loaded.get("benchmarks") if isinstance(loaded, dict) else loaded
    if not isinstance(items, list):
        raise ValueError(f"{path}: expected a list under 'benchmarks:'")
    specs = []
    for i, item in enumerate(items):
        try:
            specs.append(BenchmarkSpecCreate.model_validate(item).model_dump(mode="json"))
        except ValidationError as e:
            name = item.get("name", "?") if isinstance(item, dict) else "?"
            raise ValueError(f"{path}: benchmarks[{i}] ({name}): {e}") from e
    return specs


def _apply(args: argparse.Namespace) -> int:
    import yaml

    try:
        specs = load_specs(args.file)
    except (OSError, ValueError, yaml.YAMLError) as e:
        print(f"perfdash: {e}", file=sys.stderr)
        return EXIT_ERROR
    for spec in specs:
        change = _call(args, "POST", "/api/v1/benchmarks", spec)
        mark = {"created": "+", "updated": "~", "unchanged": "="}[change["action"]]
        print(f"{mark} {change['name']}")
        for field, (old, new) in change["changes"].items():
            print(f"    {field}: {old!r} -> {new!r}")
    return 0


def _run(args: argparse.Namespace) -> int:
    body = {"ref": args.ref, "repeat": args.repeat}
    first = _call(args, "POST", f"/api/v1/benchmarks/{args.name}/runs", body)
    ids = first.get("queued") or [first["id"]]
    for run_id in ids:
        print(f"queued run {run_id} of {args.name}")
    _warn(first["warnings"])
    if not args.wait:
        return 0
    deadline = time.monotonic() + args.timeout
    if len(ids) > 1:
        return _wait_batch(args, first["id"], deadline)
    codes = []
    for run_id in ids:
        run = (
            first
            if run_id == first["id"]
            else _call(args, "GET", f"/api/v1/benchmark-runs/{run_id}")
        )
        run = _wait(args, run, deadline)
        if run["status"] not in _DONE:
            print(
                f"perfdash: run {run['id']} is still {run['status']} after {args.timeout:g} s; "
                "giving up (the run stays queued; raise --timeout to wait longer)",
                file=sys.stderr,
            )
            return EXIT_ERROR
        _print_run(args, run)
        codes.append(0 if run["status"] == "succeeded" else 1)
    return max(codes)


def _warn(warnings: list[str], shown: set[str] | None = None) -> None:
    """Print each warning once (to stderr, so stdout stays the run's result)."""
    for line in warnings:
        if shown is None or line not in shown:
            print(f"perfdash: warning: {line}", file=sys.stderr, flush=True)
            if shown is not None:
                shown.add(line)


def _wait(args: argparse.Namespace, run: dict[str, Any], deadline: float) -> dict[str, Any]:
    """Poll the run until it finishes or the `--timeout` deadline passes; a new warning
    (the runner went away) is printed as it appears."""
    shown = set(run["warnings"])
    while run["status"] not in _DONE:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        time.sleep(min(1.0, left))
        run = _call(args, "GET", f"/api/v1/benchmark-runs/{run['id']}")
        _warn(run["warnings"], shown)
    return run


def _wait_batch(args: argparse.Namespace, first_id: str, deadline: float) -> int:
    """Wait for an A/A batch, replacements of flagged runs included, printing each run as
    it ends; exit 0 once N usable runs exist, 1 when its budget of extra runs ran out."""
    printed: set[str] = set()
    while True:
        batch = _call(args, "GET", f"/api/v1/benchmark-runs/{first_id}/aa-batch")
        for row in batch["runs"]:
            if row["id"] not in printed and row["status"] in _DONE:
                printed.add(row["id"])
                print(f"run {row['id']}" + (f" (left out: {row['why']})" if row["why"] else ""))
                _print_run(args, _call(args, "GET", f"/api/v1/benchmark-runs/{row['id']}"))
        if batch["state"] != "running":
            break
        left = deadline - time.monotonic()
        if left <= 0:
            print(f"perfdash: A/A batch still running after {args.timeout:g} s: "
                  f"{batch['message']}; giving up (raise --timeout)", file=sys.stderr)  # fmt: skip
            return EXIT_ERROR
        time.sleep(min(1.0, left))
    print(f"A/A batch: {batch['message']}")
    if batch["state"] != "complete":
        print(f"perfdash: warning: {batch['message']}", file=sys.stderr)
    return 0 if batch["state"] == "complete" else 1


def _print_run(args: argparse.Namespace, run: dict[str, Any]) -> None:
    print(f"{run['status']}" + (f" ({run['reason']}): {run['error']}" if run["reason"] else ""))
    for point in run["results"]:
        values = ", ".join(
            f"{m['metric']}={m['value']:.4g}"
            for m in point["metrics"]
            if m.get("value") is not None
        )
        print(f"  {point['label'] or args.name}: {values}")
    if run["determinism_hash"]:
        print(f"  determinism_hash={run['determinism_hash']}")


def _list(args: argparse.Namespace) -> int:
    for spec in _call(args, "GET", "/api/v1/benchmarks")["items"]:
        last = spec["last_run"] or {}
        print(
            f"{spec['name']:32} {spec['kind']:9} {last.get('status', '-'):10} {last.get('id', '')}"
        )
    return 0


def _beat(_args: argparse.Namespace) -> int:
    from backend.core.config import get_settings
    from backend.core.task_names import BENCH_TICK, INGEST_QUEUE
    from workers.celery_app import app

    app.conf.beat_schedule = {
        "bench-tick": {
            "task": BENCH_TICK,
            "schedule": TICK_EVERY_S,
            "options": {"queue": INGEST_QUEUE},
        }
    }
    schedule = get_settings().data_dir.resolve() / "celerybeat-schedule"
    schedule.parent.mkdir(parents=True, exist_ok=True)
    app.Beat(loglevel="INFO", schedule=str(schedule)).run()
    return 0
