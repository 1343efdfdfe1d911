"""The built-in workloads, by the name a spec gives in `workload`.

Each `prepare(params, device)` builds tensors from the current (seeded) RNG and returns
a `harness.Workload`; the all-reduce is multi-process and has its own entry point.

Public surface: `BUILTINS`, `ALLREDUCE`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch

from workers.bench.harness import Workload
from workers.bench.workloads import d2d_copy, gemm, sdpa, train_step

__all__ = ["ALLREDUCE", "BUILTINS"]

Prepare = Callable[[Mapping[str, Any], torch.device], Workload]
BUILTINS: dict[str, Prepare] = {
    "gemm": gemm.prepare,
    "sdpa": sdpa.prepare,
    "train_step": train_step.prepare,
    "copy": d2d_copy.prepare,
}
ALLREDUCE = "allreduce"
