"""Reference timing for issue 11: a plain torch.distributed all-reduce loop, written
independently of perfdash's harness (no CUDA events, no shared code): host timer around
`iters` back-to-back collectives, fenced by `torch.cuda.synchronize()` and a barrier.

    python perf/multigpu/reference_allreduce.py 1048576 1073741824 ...  (prints JSON)
"""

from __future__ import annotations

import json
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

WARMUP, ITERS = 10, 30


def _rank(rank: int, world: int, sizes: list[int], port: int, out: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("nccl", rank=rank, world_size=world)
    torch.cuda.set_device(rank)
    rows = []
    for size in sizes:
        x = torch.ones(size // 4, device="cuda", dtype=torch.float32)
        for _ in range(WARMUP):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        dist.barrier()
        start = time.perf_counter()
        for _ in range(ITERS):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        seconds = (time.perf_counter() - start) / ITERS
        worst = torch.tensor([seconds], device="cuda")
        dist.all_reduce(worst, op=dist.ReduceOp.MAX)
        t = float(worst.item())
        algbw = size / t / 1e9
        rows.append(
            {
                "size_bytes": size,
                "time_ms": t * 1e3,
                "algbw_gbps": algbw,
                "busbw_gbps": algbw * 2 * (world - 1) / world,
            }
        )
    if rank == 0:
        with open(out, "w") as f:
            json.dump({"world_size": world, "rows": rows}, f)
    dist.destroy_process_group()


def main() -> int:
    for key in ("NCCL_NVLS_ENABLE", "NVSHMEM_DISABLE_NVLS"):
        os.environ[key] = "0" if key == "NCCL_NVLS_ENABLE" else "1"
    os.environ["TORCH_SYMM_MEM_DISABLE_MULTICAST"] = "1"
    sizes = [int(s) for s in sys.argv[1:]]
    world = torch.cuda.device_count()
    out = "/tmp/reference_allreduce.json"
    mp.spawn(_rank, args=(world, sizes, 29533, out), nprocs=world, join=True)  # type: ignore[no-untyped-call]
    with open(out) as f:
        print(f.read())
    return 0


if __name__ == "__main__":
    sys.exit(main())
