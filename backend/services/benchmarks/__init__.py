"""Benchmark specs, runs, runners, their cron schedules and bisects."""

from backend.services.benchmarks.aa import AA_TRIGGERS, batch_state, top_up
from backend.services.benchmarks.bisect import (
    advance_for_run,
    git_url,
    refuse_bisect,
    start_bisect,
    store_commits,
)
from backend.services.benchmarks.bisect_report import get_bisect, list_bisects
from backend.services.benchmarks.bisect_trigger import start_from_verdicts
from backend.services.benchmarks.runners import (
    HEARTBEAT_EVERY,
    heartbeat,
    list_runners,
    mark_offline,
    register_runner,
    warn_unserved,
)
from backend.services.benchmarks.runs import (
    FailureReason,
    claim_run,
    fail_run,
    finish_run,
    requeue_run,
)
from backend.services.benchmarks.specs import (
    check_storage_paths,
    delete_spec,
    enqueue_due_runs,
    get_run,
    get_spec,
    list_runs,
    list_specs,
    request_run,
    run_branches,
    runs_user_code,
    upsert_spec,
)

__all__ = [
    "AA_TRIGGERS",
    "HEARTBEAT_EVERY",
    "FailureReason",
    "advance_for_run",
    "batch_state",
    "check_storage_paths",
    "claim_run",
    "delete_spec",
    "enqueue_due_runs",
    "fail_run",
    "finish_run",
    "get_bisect",
    "get_run",
    "get_spec",
    "git_url",
    "heartbeat",
    "list_bisects",
    "list_runners",
    "list_runs",
    "list_specs",
    "mark_offline",
    "refuse_bisect",
    "register_runner",
    "request_run",
    "requeue_run",
    "run_branches",
    "runs_user_code",
    "start_bisect",
    "start_from_verdicts",
    "store_commits",
    "top_up",
    "upsert_spec",
    "warn_unserved",
]
