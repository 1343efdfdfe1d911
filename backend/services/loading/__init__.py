"""Loading a stored trace: the ingest pipeline, progress, the re-enqueue sweeper and the
re-ingest of stored traces from their kept blobs (`perfdash db reindex`).
"""

from backend.services.loading.pipeline import ingest_trace
from backend.services.loading.progress import read_progress
from backend.services.loading.reindex import reindex_trace, traces_to_reindex
from backend.services.loading.requeue import sweep_traces

__all__ = [
    "ingest_trace",
    "read_progress",
    "reindex_trace",
    "sweep_traces",
    "traces_to_reindex",
]
