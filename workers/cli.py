"""The `perfdash` command: the composition root above every package.

`serve` is the one place that mounts the dashboard into the API app and starts a worker
process, so `backend` never imports `dashboard` or `workers`.
"""

from __future__ import annotations

import argparse
import json
import logging
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from backend.core.task_names import INGEST_QUEUE

if TYPE_CHECKING:
    from ingest import TraceStats

log = logging.getLogger("perfdash")


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `perfdash` console script."""
    parser = _build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    result: int = args.handler(args)
    return result


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="perfdash", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(required=True, metavar="COMMAND")

    serve = sub.add_parser("serve", help="run the API, the dashboard and a Celery worker")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--no-worker", action="store_true", help="do not start a worker process")
    serve.add_argument("--no-samples", action="store_true", help="do not seed sample traces")
    serve.set_defaults(handler=_serve)

    worker = sub.add_parser("worker", help="run a Celery worker")
    worker.add_argument("--queues", default=INGEST_QUEUE, help="comma-separated, e.g. ingest,gpu")
    worker.add_argument("--concurrency", type=int, default=None)
    worker.set_defaults(handler=_worker)

    db = sub.add_parser("db", help="database maintenance")
    db_sub = db.add_subparsers(required=True, metavar="ACTION")
    db_sub.add_parser("upgrade", help="apply all migrations").set_defaults(handler=_db_upgrade)

    ingest = sub.add_parser("ingest", help="parse a trace locally, with no server")
    ingest.add_argument("file", type=Path)
    ingest.add_argument("--json", action="store_true", help="print the summary as JSON")
    ingest.add_argument("--top", type=int, default=None, help="only the N largest kernels")
    ingest.set_defaults(handler=_ingest)
    return parser


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from backend.core.migrate import upgrade_database
    from workers.serve import build_app, seed_samples

    upgrade_database()
    worker = None if args.no_worker else _spawn_worker()
    try:
        if not args.no_samples:
            seed_samples()
        uvicorn.run(build_app(args.host, args.port), host=args.host, port=args.port)
    finally:
        if worker is not None:
            worker.terminate()
            worker.wait(timeout=30)
    return 0


def _spawn_worker() -> subprocess.Popen[bytes]:
    cmd = [
        sys.executable,
        "-m",
        "workers.cli",
        "worker",
        "--queues",
        INGEST_QUEUE,
        "--concurrency",
        "1",
    ]
    log.info("starting worker: %s", " ".join(cmd))
    return subprocess.Popen(cmd)


def _worker(args: argparse.Namespace) -> int:
    from backend.core.migrate import upgrade_database
    from workers.celery_app import app

    upgrade_database()
    argv = ["worker", "--loglevel=INFO", f"--queues={args.queues}", "--without-gossip"]
    if args.concurrency:
        argv.append(f"--concurrency={args.concurrency}")
    app.worker_main(argv=argv)
    return 0


def _db_upgrade(_args: argparse.Namespace) -> int:
    from backend.core.migrate import upgrade_database

    upgrade_database()
    print("database is at the latest revision")
    return 0


def _ingest(args: argparse.Namespace) -> int:
    from ingest import IngestError, TraceStats, parse_file

    try:
        parsed = parse_file(args.file)
        stats = TraceStats()
        for event in parsed.events:
            stats.add(event)
    except (IngestError, OSError) as e:
        print(f"perfdash: cannot ingest {args.file}: {e}", file=sys.stderr)
        return 2
    file, fmt = str(args.file), parsed.meta.format.value
    doc = {
        "file": file,
        "format": fmt,
        "events": dict(stats.counts),
        "duration_ns": stats.duration_ns,
        "devices": [{"index": d.index, "name": d.name} for d in parsed.meta.devices],
        "skipped_events": parsed.report.skipped,
        "warnings": parsed.report.warnings,
        "kernels": [k.as_dict() for k in stats.kernels(args.top)],
    }
    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        _print_summary(file, fmt, stats, args.top)
    return 0


def _print_summary(file: str, fmt: str, stats: TraceStats, top: int | None) -> None:
    print(f"{file}: {fmt}, events {dict(stats.counts)}")
    print(f"{'total ms':>10} {'count':>7} {'mean us':>9}  name")
    for k in stats.kernels(top):
        print(f"{k.total_ns / 1e6:10.3f} {k.count:7d} {k.mean_ns / 1e3:9.2f}  {k.name[:100]}")


if __name__ == "__main__":
    sys.exit(main())
