#!/usr/bin/env python3
"""Workload for the Nsight Compute fixtures (`tests/data/ncu/*.csv`).

Run under `ncu --profile-from-start off` by `tests/data/make_gpu_fixtures.sh`. Inside the
profiler range it launches, twice each: a bf16 4096x4096 @ 4096x4096 GEMM (2 * 4096^3 =
137.4 GFLOP per launch, tensor cores) and an elementwise float32 add of two 64 Mi-element
vectors (64 Mi FLOP, 768 MiB of DRAM traffic: a point far left on the roofline). Warm-up
launches run before the range so cuBLAS set-up kernels stay out of it. Prints nothing.
"""

from __future__ import annotations

import torch

SIZE = 4096
ELEMENTS = 64 << 20
LAUNCHES = 2


def main() -> None:
    """Run the workload once."""
    torch.manual_seed(0)
    dev = torch.device("cuda", 0)
    a = torch.randn(SIZE, SIZE, device=dev, dtype=torch.bfloat16)
    b = torch.randn(SIZE, SIZE, device=dev, dtype=torch.bfloat16)
    x = torch.randn(ELEMENTS, device=dev)
    y = torch.randn(ELEMENTS, device=dev)
    c = a @ b
    z = x + y
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    for _ in range(LAUNCHES):
        c = a @ b
        z = x + y
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    assert c.shape == (SIZE, SIZE) and z.shape == (ELEMENTS,)


if __name__ == "__main__":
    main()
