"""Device-to-device copy: GB/s counted as bytes read plus bytes written."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from workers.bench.harness import Phase, Workload
from workers.bench.workloads._common import int_param


def prepare(params: Mapping[str, Any], device: torch.device) -> Workload:
    """Two buffers of `size_bytes`; a step copies one into the other."""
    size = int_param(params, "size_bytes", 1 << 28)
    src = torch.randint(0, 256, (size,), device=device, dtype=torch.uint8)
    dst = torch.empty_like(src)
    phase = Phase(
        step=lambda: dst.copy_(src),
        time_metric="time_ms",
        bytes=2.0 * size,
        bandwidth_metric="bandwidth_gbps",
    )
    return Workload(phases=[phase], outputs=lambda: [dst])
