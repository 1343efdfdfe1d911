"""Example `callable` workloads: the contract a team's own model plugs into.

A callable takes `(params, seed, device)` and returns native points, optionally with
`outputs` (tensors the runner hashes for the determinism check). It may use the
harness for timing, as `matmul_chain` does. `crash`, `sleep` and `fail` exist so the
failure paths (killed, time limit, error) can be exercised without a GPU.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Mapping
from typing import Any

import torch

from workers.bench.harness import measure, resolve_device
from workers.bench.points import samples_point


def matmul_chain(params: Mapping[str, Any], seed: int, device: str) -> dict[str, Any]:
    """`depth` chained matmuls of size `n`: time per chain, and the final product to hash."""
    n, depth = int(params.get("n", 64)), int(params.get("depth", 4))
    dev = resolve_device(device)
    torch.manual_seed(seed)
    weights = [torch.randn(n, n, device=dev) / n**0.5 for _ in range(depth)]
    x = torch.randn(n, n, device=dev)
    out: list[torch.Tensor] = [x]

    def chain() -> None:
        y = x
        for w in weights:
            y = y @ w
        out[:] = [y]

    timing = measure(chain, device=dev, warmup=2, iters=int(params.get("iters", 10)))
    return {"points": [samples_point("chain_ms", "ms", timing.samples_ms)], "outputs": out}


def crash(params: Mapping[str, Any], seed: int, device: str) -> list[dict[str, Any]]:
    """Die the way the kernel's OOM killer kills a process."""
    os.kill(os.getpid(), signal.SIGKILL)
    return []


def sleep(params: Mapping[str, Any], seed: int, device: str) -> list[dict[str, Any]]:
    """Outlive any time limit."""
    time.sleep(float(params.get("seconds", 3600)))
    return []


def fail(params: Mapping[str, Any], seed: int, device: str) -> list[dict[str, Any]]:
    """Raise, as a broken model would."""
    raise RuntimeError("this workload always fails")
