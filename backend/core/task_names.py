"""Celery task names: the stable contract between the API (producer) and the workers.

The backend enqueues by these names and never imports `workers`.
"""

INGEST_TRACE = "perfdash.ingest_trace"

INGEST_QUEUE = "ingest"
GPU_QUEUE = "gpu"
