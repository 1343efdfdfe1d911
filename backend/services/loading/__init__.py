"""Loading a stored trace: the ingest pipeline, the event store, progress and the re-enqueue
sweeper.
"""

from backend.services.loading.pipeline import ingest_trace
from backend.services.loading.progress import read_progress
from backend.services.loading.requeue import sweep_traces

__all__ = [
    "ingest_trace",
    "read_progress",
    "sweep_traces",
]
