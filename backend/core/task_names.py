"""Celery task names: the stable contract between the API (producer) and the workers.

The backend enqueues by these names and never imports `workers`.
"""

INGEST_TRACE = "perfdash.ingest_trace"

INGEST_QUEUE = "ingest"
GPU_QUEUE = "gpu"

# Benchmark runs go to the spec's runner queue; the schedule tick rides on the CPU queue.
RUN_BENCHMARK = "perfdash.run_benchmark"
BENCH_TICK = "perfdash.bench_tick"

# Alerts ride on the CPU worker's queue, so `perfdash serve`'s worker delivers them too.
DELIVER_WEBHOOK = "perfdash.deliver_webhook"
ALERTS_QUEUE = INGEST_QUEUE
