"""`perfdash db upgrade` and `perfdash db reindex`: bring the database to the latest
migration, re-ingesting stored traces from their kept uploads where that needs it.

Migration 0015 drops the old `events` table, so a database from before the columnar store
(issue 17) is taken to 0014 (which adds `traces.dataset`), its traces are re-ingested into
datasets, one at a time with a line of progress each, and only then is it taken to head.
`serve`, `worker` and the account commands start through the same `prepare_database`.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import TextIO

# 0014 adds `traces.dataset`; 0015 drops `events`, refusing while a ready trace has no dataset.
DATASETS_REVISION = "0014"
DROP_EVENTS_REVISION = "0015"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `db` command and its actions."""
    db = sub.add_parser("db", help="database maintenance")
    db_sub = db.add_subparsers(required=True, metavar="ACTION")
    db_sub.add_parser(
        "upgrade", help="apply all migrations (re-ingesting traces from before the columnar store)"
    ).set_defaults(handler=_upgrade)
    reindex = db_sub.add_parser(
        "reindex",
        help="re-ingest ready traces with no dataset or an older parser version from their "
        "kept uploads",
    )
    reindex.add_argument("--all", action="store_true", help="re-ingest every ready trace")
    reindex.set_defaults(handler=_reindex)


def prepare_database(out: TextIO | None = None) -> int:
    """Migrate to head; a database from before the columnar store has its traces
    re-ingested at revision 0014 first.

    Returns:
        How many traces failed to re-ingest (they are `failed`, saying why).
    """
    from backend.core.migrate import current_revision, is_applied, upgrade_database

    failed = 0
    if current_revision() is not None and not is_applied(DROP_EVENTS_REVISION):
        upgrade_database(revision=DATASETS_REVISION)
        failed = reindex(out or sys.stdout, every=False)
    upgrade_database()
    return failed


def reindex(out: TextIO, *, every: bool) -> int:
    """Re-ingest the traces that need it (every ready one with `every`), printing a line as
    each starts and ends; a failure is reported and the rest go on.

    Returns:
        How many traces failed.
    """
    from backend.core.config import get_settings
    from backend.core.db import get_engine
    from backend.services.loading import reindex_trace, traces_to_reindex

    engine, settings = get_engine(), get_settings()
    targets = traces_to_reindex(engine, every=every)
    if not targets:
        print("reindex: no trace needs re-ingesting", file=out, flush=True)
        return 0
    print(f"reindex: {len(targets)} trace(s) to re-ingest from their kept uploads", file=out)
    done = failed = skipped = 0
    began = time.monotonic()
    for i, target in enumerate(targets, 1):
        where = f"[{i}/{len(targets)}] {target.name} ({target.id})"
        print(f"{where}: re-ingesting", file=out, flush=True)
        start = time.monotonic()
        result = reindex_trace(engine, settings, target.id, force=every)
        took = f"{time.monotonic() - start:.1f} s"
        if result.status is None:
            skipped += 1
            line = f"skipped ({took}): deleted meanwhile, or a worker is ingesting it"
        elif result.status == "ready":
            done += 1
            line = f"ready, {result.events:,} events in {took}"
        else:
            failed += 1
            line = f"FAILED ({result.status}, {took}): {result.error}"
        print(f"{where}: {line}", file=out, flush=True)
    total = f"{time.monotonic() - began:.1f} s"
    print(
        f"reindex: {done} re-ingested, {failed} failed, {skipped} skipped in {total}",
        file=out,
        flush=True,
    )
    return failed


def _upgrade(_args: argparse.Namespace) -> int:
    failed = prepare_database(sys.stdout)
    print("database is at the latest revision")
    if failed:
        print(
            f"perfdash: {failed} trace(s) could not be re-ingested; their errors are shown "
            "on the traces (upload those files again)",
            file=sys.stderr,
        )
    return 0


def _reindex(args: argparse.Namespace) -> int:
    from backend.core.migrate import current_revision, is_applied, upgrade_database

    if current_revision() is None:
        upgrade_database()
    elif not is_applied(DATASETS_REVISION):
        upgrade_database(revision=DATASETS_REVISION)  # adds traces.dataset, and nothing else
    return 1 if reindex(sys.stdout, every=args.all) else 0
