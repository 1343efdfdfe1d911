"""Scaled dot-product attention, forward and forward+backward, by sequence length and heads.

FLOPs follow the FlashAttention papers: 4·b·h·s²·d for the forward (two matmuls),
halved when causal, and 2.5x that for the backward.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
import torch.nn.functional as F

from workers.bench.harness import Phase, Workload
from workers.bench.workloads._common import dtype_of, int_param


def prepare(params: Mapping[str, Any], device: torch.device) -> Workload:
    """Random q, k, v of shape (batch, heads, seq, head_dim) that require grad."""
    b, h = int_param(params, "batch", 4), int_param(params, "heads", 16)
    s, d = int_param(params, "seq", 2048), int_param(params, "head_dim", 128)
    causal = bool(params.get("causal", True))
    dtype = dtype_of(params)
    q, k, v = (
        torch.randn(b, h, s, d, device=device, dtype=dtype, requires_grad=True) for _ in range(3)
    )
    grad = torch.randn(b, h, s, d, device=device, dtype=dtype)
    out: list[torch.Tensor] = []

    def forward() -> None:
        with torch.no_grad():
            out[:] = [F.scaled_dot_product_attention(q, k, v, is_causal=causal)]

    def forward_backward() -> None:
        q.grad = k.grad = v.grad = None
        F.scaled_dot_product_attention(q, k, v, is_causal=causal).backward(grad)  # type: ignore[no-untyped-call]

    fwd_flops = 4.0 * b * h * s * s * d / (2 if causal else 1)
    io_bytes = float(4 * b * h * s * d * q.element_size())
    phases = [
        Phase(forward, "fwd_time_ms", fwd_flops, "fwd_tflops", io_bytes),
        Phase(forward_backward, "fwd_bwd_time_ms", 3.5 * fwd_flops, "fwd_bwd_tflops", io_bytes * 2),
    ]
    return Workload(
        phases=phases,
        outputs=lambda: [t for t in (*out, q.grad, k.grad, v.grad) if t is not None],
    )
