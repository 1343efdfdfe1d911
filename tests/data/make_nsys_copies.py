#!/usr/bin/env python3
"""Workload for the Nsight Systems copies fixture (`tests/data/nsys/copies.*`).

Run under `nsys profile` by `tests/data/make_gpu_fixtures.sh`; it prints nothing. Three
CUDA streams each do, twice: a host-to-device copy (from pinned memory on streams 0 and 2, from
pageable memory on stream 1), a kernel on the copied data, a device-to-device copy, and a
device-to-host copy (to pinned memory on streams 0 and 2, pageable on stream 1). Each stream's
work sits in an NVTX range named after it. Fixed sizes; needs one CUDA GPU and torch.
"""

from __future__ import annotations

import torch

N = 4 << 20  # float32 elements: 16 MiB per buffer
STREAMS = 3
REPEATS = 2


def main() -> None:
    """Run the workload once."""
    dev = torch.device("cuda", 0)
    streams = [torch.cuda.Stream(device=dev) for _ in range(STREAMS)]
    pinned = [i % 2 == 0 for i in range(STREAMS)]
    hosts = [torch.full((N,), float(i + 1), pin_memory=pinned[i]) for i in range(STREAMS)]
    backs = [torch.empty(N, pin_memory=pinned[i]) for i in range(STREAMS)]
    devs = [torch.empty(N, device=dev) for _ in range(STREAMS)]
    copies = [torch.empty(N, device=dev) for _ in range(STREAMS)]
    torch.cuda.synchronize()
    for rep in range(REPEATS):
        for i, stream in enumerate(streams):
            kind = "pinned" if pinned[i] else "pageable"
            with torch.cuda.stream(stream):
                torch.cuda.nvtx.range_push(f"stream {i} {kind} rep {rep}")
                devs[i].copy_(hosts[i], non_blocking=True)
                devs[i].mul_(2.0)
                copies[i].copy_(devs[i])
                backs[i].copy_(copies[i], non_blocking=True)
                torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    for i in range(STREAMS):
        assert float(backs[i][0]) == 2.0 * (i + 1)


if __name__ == "__main__":
    main()
