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

# A bisect lists the commits between good and bad on its runner (`git rev-list`).
LIST_BISECT_COMMITS = "perfdash.list_bisect_commits"


def runner_queue(runner: str) -> str:
    """The queue only this runner consumes, so a bisect's runs all land on one machine
    (same-runner A/B); every benchmark worker adds it to its queues at start-up."""
    return f"runner.{runner}"
