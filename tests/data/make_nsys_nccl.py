#!/usr/bin/env python3
"""Workload for the Nsight Systems NCCL fixture (`tests/data/nsys/nccl_2gpu.*`).

Run by `tests/data/make_gpu_fixtures.sh` on a machine with two GPUs, as
`nsys profile ... python3 -m torch.distributed.run --nproc_per_node 2 make_nsys_nccl.py`.
Each rank does three NVTX-ranged steps of a bf16 matmul followed by an NCCL all-reduce of a
16 MiB gradient-sized tensor, so the export holds real NCCL kernels on two devices, NCCL's own
NVTX domain, and a GPU table with two CUDA ordinals. Prints nothing.
"""

from __future__ import annotations

import os

import torch
import torch.distributed as dist

STEPS = 3


def main() -> None:
    """Run one rank's share of the workload."""
    rank = int(os.environ["LOCAL_RANK"])
    dev = torch.device("cuda", rank)
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", device_id=dev)
    torch.manual_seed(rank)
    a = torch.randn(2048, 2048, device=dev, dtype=torch.bfloat16)
    grad = torch.ones(4 << 20, device=dev)
    for step in range(STEPS):
        torch.cuda.nvtx.range_push(f"step {step}")
        b = a @ a
        dist.all_reduce(grad)
        torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    assert b.shape == a.shape and float(grad[0]) == 2.0**STEPS
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
