"""Traces as records: accept, read, list, delete and every status change; their blobs, kernel
stats and exports.
"""

from backend.services.traces.blob_store import blob_path
from backend.services.traces.blob_sweep import sweep_blobs
from backend.services.traces.chrome_export import export_chrome_trace
from backend.services.traces.kernel_stats import list_kernel_stats, store_kernel_stats
from backend.services.traces.lifecycle import (
    accept_upload,
    check_upload_fields,
    default_name,
    delete_trace,
    get_trace,
    list_traces,
)
from backend.services.traces.projects import list_projects
from backend.services.traces.rank_files import check_rank_files
from backend.services.traces.states import (
    claim_trace,
    fail_abandoned,
    mark_failed,
    mark_ready,
    requeue_or_fail,
    requeue_stale,
)
from backend.services.traces.upload_bundle import bundle_uploads

__all__ = [
    "accept_upload",
    "blob_path",
    "bundle_uploads",
    "check_rank_files",
    "check_upload_fields",
    "claim_trace",
    "default_name",
    "delete_trace",
    "export_chrome_trace",
    "fail_abandoned",
    "get_trace",
    "list_kernel_stats",
    "list_projects",
    "list_traces",
    "mark_failed",
    "mark_ready",
    "requeue_or_fail",
    "requeue_stale",
    "store_kernel_stats",
    "sweep_blobs",
]
