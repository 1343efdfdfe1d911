"""All-reduce across the local GPUs (NCCL) or CPU processes (gloo): bus bandwidth.

One process per rank through `torch.multiprocessing.spawn`. Each rank times the
collective with CUDA events (perf_counter on gloo); the per-iteration samples are then
max-reduced over ranks, since a collective is as slow as its slowest rank. Bus bandwidth
is nccl-tests' definition: algbw · 2(n-1)/n, with algbw = bytes / time.

Standalone (what issue 11 runs on a multi-GPU machine)::

    python -m workers.bench.workloads.allreduce --sizes 1M 16M 256M 1G --iters 20

prints one JSON document with a row per size.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from workers.bench.determinism import tensor_digest
from workers.bench.harness import measure, synchronize
from workers.bench.stats import summarize

# NVLink SHARP / multicast is off on the project's GPU hosts; NCCL must not try it.
NCCL_ENV = {
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
}
_SUFFIX = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_size(text: str) -> int:
    """`256M` -> 268435456; plain integers are bytes.

    >>> parse_size("1K"), parse_size("4096")
    (1024, 4096)
    """
    unit = _SUFFIX.get(text[-1:].upper(), 1)
    return int(text[:-1] if unit > 1 else text) * unit


def default_world_size(device_type: str) -> int:
    """Every local GPU on CUDA; two processes on CPU (enough to exercise the path)."""
    return torch.cuda.device_count() if device_type == "cuda" else 2


def measure_allreduce(
    sizes: list[int], *, warmup: int, iters: int, world_size: int, device_type: str
) -> list[dict[str, Any]]:
    """Spawn `world_size` ranks, time an all-reduce of each size, return one row per size."""
    if world_size < 2:
        raise ValueError(f"all-reduce needs 2 or more ranks; this runner has {world_size}")
    if device_type == "cuda" and world_size > torch.cuda.device_count():
        raise ValueError(f"world_size {world_size} > {torch.cuda.device_count()} local GPUs")
    os.environ.update(NCCL_ENV)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "rows.json"
        args = (world_size, sizes, warmup, iters, device_type, _free_port(), str(out))
        mp.spawn(_rank_main, args=args, nprocs=world_size, join=True)  # type: ignore[attr-defined,no-untyped-call]
        rows: list[dict[str, Any]] = json.loads(out.read_text())
    return rows


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _rank_main(
    rank: int,
    world_size: int,
    sizes: list[int],
    warmup: int,
    iters: int,
    device_type: str,
    port: int,
    out: str,
) -> None:
    cuda = device_type == "cuda"
    device = torch.device(f"cuda:{rank}" if cuda else "cpu")
    if cuda:
        torch.cuda.set_device(device)
    dist.init_process_group(
        "nccl" if cuda else "gloo",
        init_method=f"tcp://127.0.0.1:{port}",
        rank=rank,
        world_size=world_size,
    )
    try:
        rows = [_one_size(size, device, world_size, warmup, iters) for size in sizes]
        if rank == 0:
            Path(out).write_text(json.dumps(rows))
    finally:
        dist.destroy_process_group()


def _one_size(
    size: int, device: torch.device, world_size: int, warmup: int, iters: int
) -> dict[str, Any]:
    numel = max(1, size // 4)
    buf = torch.ones(numel, device=device, dtype=torch.float32)
    timing = measure(lambda: dist.all_reduce(buf), device=device, warmup=warmup, iters=iters)
    slowest = torch.tensor(timing.samples_ms, device=device, dtype=torch.float64)
    dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
    samples = slowest.cpu().tolist()
    dist.barrier()
    start = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(buf)
    synchronize(device)
    host_mean_ms = (time.perf_counter() - start) * 1e3 / iters
    # A fixed input, reduced once, checks correctness and feeds the determinism hash.
    check = torch.full((numel,), float(dist.get_rank() + 1), device=device)
    dist.all_reduce(check)
    expected = world_size * (world_size + 1) / 2
    if not bool((check == expected).all()):
        raise RuntimeError(f"all-reduce of {size} bytes gave a wrong sum")
    nbytes = numel * 4
    algbw = nbytes / (summarize(samples)["p50"] / 1e3) / 1e9
    return {
        "size_bytes": nbytes,
        "world_size": world_size,
        "samples_ms": samples,
        "algbw_gbps": algbw,
        "busbw_gbps": algbw * 2 * (world_size - 1) / world_size,
        "host_mean_ms": host_mean_ms,
        "hash": tensor_digest([check]),
        "timer": timing.timer,
    }


def main(argv: list[str] | None = None) -> int:
    """Print a JSON document of bus bandwidth against message size."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=["1M", "16M", "256M"])
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--device", choices=["cuda", "cpu"], default=None)
    parser.add_argument("--world-size", type=int, default=None)
    args = parser.parse_args(argv)
    device_type = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    rows = measure_allreduce(
        [parse_size(s) for s in args.sizes],
        warmup=args.warmup,
        iters=args.iters,
        world_size=args.world_size or default_world_size(device_type),
        device_type=device_type,
    )
    json.dump({"device": device_type, "env": NCCL_ENV, "rows": rows}, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
