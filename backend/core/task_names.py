"""Celery task names: the stable contract between the API (producer) and the workers.

The backend enqueues by these names and never imports `workers`.
"""

INGEST_TRACE = "perfdash.ingest_trace"

INGEST_QUEUE = "ingest"
GPU_QUEUE = "gpu"

# Benchmark runs go to the spec's runner queue; the schedule tick rides on the CPU queue.
RUN_BENCHMARK = "perfdash.run_benchmark"
BENCH_TICK = "perfdash.bench_tick"

# Webhook deliveries have a queue of their own, so a slow receiver never holds an ingest
# worker; `perfdash serve`'s embedded worker consumes it next to `ingest`.
DELIVER_WEBHOOK = "perfdash.deliver_webhook"
WEBHOOKS_QUEUE = "webhooks"

# The queues of CPU workers (no GPU runner registration, and they run the sweepers).
CPU_QUEUES = (INGEST_QUEUE, WEBHOOKS_QUEUE)
