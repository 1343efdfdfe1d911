"""The benchmark runner: fixed-seed torch workloads, timed, hashed and fingerprinted.

torch is imported only inside this package, and only by the modules that run a
workload (`harness`, `determinism`, `workloads.*`, `run`). `spec`, `stats` and `sweep`
are pure, so the Celery task and the CLI can use them without loading torch.

Public surface: `RunRequest` (spec), `expand_sweep` (sweep), `summarize` (stats).
"""

from workers.bench.spec import RunRequest
from workers.bench.stats import summarize
from workers.bench.sweep import expand_sweep

__all__ = ["RunRequest", "expand_sweep", "summarize"]
