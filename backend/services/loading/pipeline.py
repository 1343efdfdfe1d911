"""Turn a queued trace into its dataset, timeline index and kernel stats, all or nothing.

Called by the `ingest_trace` Celery task. The events go to a new columnar dataset
(`backend.services.datasets`) while the index and stats are computed from the same batches;
the dataset is renamed into place, then one transaction replaces the index and stats and
marks the trace ready naming it. Idempotent: a redelivered task either finds the trace
already ready or writes a new dataset; a failed or killed attempt leaves nothing a reader
can see (its files are removed at once, or by the sweeper).
"""

import gc
import logging
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import delete, select
from sqlalchemy.engine import Connection, Engine
from sqlmodel import Session, col

from backend.core.allocator import pin_mmap_threshold
from backend.core.config import Settings
from backend.models import KernelStatRecord, Trace, TraceStatus
from backend.services.analysis import derive_analyses
from backend.services.datasets import DatasetWriter, flow_table, remove_trace_datasets
from backend.services.loading.batches import event_batches
from backend.services.loading.progress import ProgressReporter
from backend.services.timeline import TimelineCollector, write_timeline_index
from backend.services.traces import (
    blob_path,
    claim_trace,
    mark_failed,
    mark_ready,
    requeue_or_fail,
    store_kernel_stats,
)
from ingest import PARSER_VERSION, SCHEMA_VERSION, IngestError, parse_file
from ingest.aggregate import TraceAggregator
from ingest.errors import is_disk_full
from ingest.registry import ParsedTrace
from ingest.tools import ExternalTools

log = logging.getLogger(__name__)


def ingest_trace(
    *,
    engine: Engine,
    settings: Settings,
    trace_id: str,
    time_limit_errors: tuple[type[Exception], ...] = (),
    force: bool = False,
) -> TraceStatus | None:
    """Parse the trace's blob into the database.

    Args:
        time_limit_errors: exceptions that mean the caller's time limit passed (Celery's
            `SoftTimeLimitExceeded`); the trace is failed with a message saying so.
        force: load a `ready` trace again even when its dataset is from this parser
            version (`perfdash db reindex --all`); otherwise such a trace is left as it is.

    Returns:
        The final status, or None when the trace no longer exists (deleted meanwhile) or
        another worker holds it (a duplicate or redelivered message). `queued` means the
        server's disk was full: the trace is tried again later, not failed as a bad file.
    """
    # Named columns, not the whole row: `perfdash db upgrade` re-ingests at revision 0014,
    # before later columns of `traces` exist.
    wanted = select(
        col(Trace.parser_version), col(Trace.dataset), col(Trace.status),
        col(Trace.blob_sha256), col(Trace.name),
    ).where(col(Trace.id) == trace_id)  # fmt: skip
    with Session(engine) as session:
        trace = session.execute(wanted).first()
        if trace is None:
            return None
        current = trace.parser_version == PARSER_VERSION and trace.dataset is not None
        if trace.status == TraceStatus.READY and current and not force:
            return TraceStatus.READY
        sha, name = trace.blob_sha256, trace.name
    if not claim_trace(engine, trace_id, lease_s=settings.ingest_time_limit_s):
        log.info("trace %s is being ingested by another worker; message dropped", trace_id)
        return None
    pin_mmap_threshold()  # once per process: freed parse buffers go back to the OS
    progress = ProgressReporter(engine, settings, trace_id)
    try:
        dataset = _attempt(engine, trace_id, settings, sha, name, progress)
    except IngestError as e:
        mark_failed(engine, trace_id, str(e))
        return TraceStatus.FAILED
    except Exception as e:
        if is_disk_full(e):
            return _retry_later(engine, settings, trace_id, e)
        if _raised_by(e, time_limit_errors):
            limit = settings.ingest_time_limit_s
            message = f"ingest stopped: it ran past the {limit} s time limit (INGEST_TIME_LIMIT_S)"
            mark_failed(engine, trace_id, message)
            return TraceStatus.FAILED
        log.exception("ingest of trace %s failed unexpectedly", trace_id)
        mark_failed(engine, trace_id, f"internal error while ingesting: {type(e).__name__}: {e}")
        raise
    finally:
        progress.clear()
    remove_trace_datasets(settings.blob_dir, trace_id, keep=dataset)  # the replaced one
    return TraceStatus.READY


def _attempt(
    engine: Engine,
    trace_id: str,
    settings: Settings,
    sha: str,
    name: str,
    progress: ProgressReporter,
) -> str:
    """One ingest attempt into a new dataset; returns its name once the trace row names it.
    A failed attempt removes its files before the failure is recorded, so a trace that
    reads `failed` has nothing of the attempt left."""
    writer = DatasetWriter(settings.blob_dir, trace_id, PARSER_VERSION)
    try:
        with _gc_paused(), engine.begin() as conn:
            _load(conn, trace_id, settings, sha, name, progress, writer)
    except BaseException:
        writer.discard()
        raise
    return writer.name


def _load(
    conn: Connection,
    trace_id: str,
    settings: Settings,
    sha: str,
    name: str,
    progress: ProgressReporter,
    writer: DatasetWriter,
) -> None:
    """Write the dataset, replace the trace's index and stats and mark it ready, in the
    caller's transaction."""
    conn.execute(delete(KernelStatRecord).where(KernelStatRecord.trace_id == trace_id))  # type: ignore[arg-type]
    path = blob_path(settings.blob_dir, sha)
    if not path.exists():
        raise IngestError(
            f"the uploaded bytes (sha256 {sha}) are missing from the blob store; "
            "upload the file again"
        )
    tools = ExternalTools(nsys=settings.nsys_path, ncu=settings.ncu_path)
    parsed = parse_file(
        path,
        max_bytes=settings.max_decompressed_bytes,
        source=name,
        tools=tools,
        scratch_bytes=settings.archive_scratch_bytes,
    )
    with parsed:  # an archive's extracted files go on every exit
        _store(conn, trace_id, parsed, progress, writer)


def _store(
    conn: Connection,
    trace_id: str,
    parsed: ParsedTrace,
    progress: ProgressReporter,
    writer: DatasetWriter,
) -> None:
    report = parsed.report

    # A step marker the user chose (trace_steps) outlives a re-ingest.
    chosen = select(col(Trace.step_marker)).where(col(Trace.id) == trace_id)
    marker = conn.execute(chosen).scalar()
    aggregator, timeline = TraceAggregator(step_marker=marker), TimelineCollector()
    for batch in event_batches(aggregator.feed(parsed.items)):
        writer.write(batch)
        timeline.add(batch)
        progress.update(
            bytes_done=report.bytes_done, bytes_total=report.bytes_total, events=writer.rows
        )
    writer.close_events()
    derive_analyses(writer.events_path, writer.events_path.parent, part="0")
    stats = aggregator.stats
    progress.update(
        bytes_done=report.bytes_total,
        bytes_total=report.bytes_total,
        events=aggregator.events,
        force=True,
    )
    write_timeline_index(conn, trace_id, timeline.finish(), writer)
    flows = parsed.header.flows
    if flows:
        writer.write_flows(flow_table(flows, parsed.header.rank, writer.events_path))
    if parsed.header.memory_snapshot is not None:
        writer.write_memory_snapshot(parsed.header.memory_snapshot)
    summary = aggregator.summary(parsed.header)  # first: it resolves each kernel's launching op
    store_kernel_stats(
        conn, trace_id=trace_id, kernels=stats.kernels(), groups=aggregator.kernel_groups()
    )
    loaded = {
        "format": parsed.header.format.value,
        "parser_version": PARSER_VERSION,
        "schema_version": SCHEMA_VERSION,
        "event_counts": dict(stats.counts),
        "devices": [
            {"index": d.index, "name": d.name, **d.properties} for d in parsed.header.devices
        ],
        "trace_metadata": parsed.header.metadata,
        "skipped_events": report.skipped,
        "warnings": report.warnings,
        "start_ns": stats.start_ns,
        "duration_ns": stats.duration_ns,
        "summary": summary,
        "dataset": writer.commit(),  # renamed into place; named once this commits
    }
    mark_ready(conn, trace_id, loaded)


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Hold off Python's cyclic garbage collector while a trace loads.

    The load keeps millions of small objects alive (the parse's pieces, the timeline
    index's columns and lane rows), and every generation-2 collection walks all of them: a
    fifth of the ingest time on a 1 M-event nsys export, half on a 2.5 M-event torch trace.
    The load makes no reference cycles per event, so nothing piles up; the collector is
    re-enabled (if it was on) as soon as the load ends, failed or not.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _raised_by(error: BaseException, kinds: tuple[type[Exception], ...]) -> bool:
    """Whether `error` or an error it interrupted is one of `kinds`.

    A time limit that fires inside a PostgreSQL COPY leaves the connection mid-command, so
    the rollback fails and its OperationalError hides the limit; the limit is in `__context__`.
    """
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, kinds):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _retry_later(
    engine: Engine, settings: Settings, trace_id: str, error: Exception
) -> TraceStatus:
    """The server's disk filled up: queue the trace again (the sweeper re-sends it after
    REQUEUE_AFTER_S), or, once it has had MAX_INGEST_ATTEMPTS, fail it saying whose fault."""
    log.warning("ingest of trace %s stopped: the server's disk is full (%s)", trace_id, error)
    reason = f"the server's disk is full ({error}); this is not a problem with the uploaded file"
    return requeue_or_fail(engine, trace_id, reason, max_attempts=settings.max_ingest_attempts)
