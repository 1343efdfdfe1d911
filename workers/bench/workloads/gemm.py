"""Dense GEMM `C = A @ B` by dtype and shape: TFLOP/s (2·m·n·k per call)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from workers.bench.harness import Phase, Workload
from workers.bench.workloads._common import dtype_of, int_param


def prepare(params: Mapping[str, Any], device: torch.device) -> Workload:
    """Random A (mxk), B (kxn) and an output buffer, so a step only launches the matmul."""
    m, n, k = (int_param(params, key, 1024) for key in ("m", "n", "k"))
    dtype = dtype_of(params)
    torch.backends.cuda.matmul.allow_tf32 = params.get("dtype") == "tf32"
    a = torch.randn(m, k, device=device, dtype=dtype)
    b = torch.randn(k, n, device=device, dtype=dtype)
    c = torch.empty(m, n, device=device, dtype=dtype)
    phase = Phase(
        step=lambda: torch.mm(a, b, out=c),
        time_metric="time_ms",
        flops=2.0 * m * n * k,
        flops_metric="tflops",
        bytes=float((m * k + k * n + m * n) * a.element_size()),
    )
    return Workload(phases=[phase], outputs=lambda: [c])
