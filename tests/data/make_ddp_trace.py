#!/usr/bin/env python3
"""Make a real multi-rank torch.profiler trace of a small DDP training job, one process per GPU.

Purpose
-------
Issue 11 needs the rank files of one distributed job (NCCL all-reduce kernels with their
`Collective name` / message-size args, `distributedInfo` with rank and world size) to check
that perfdash ingests them as one multi-rank trace: every rank's lanes, comm/compute overlap
per rank, and NCCL message sizes.

Each rank trains a 4-layer MLP (d=2048, bf16 autocast) wrapped in DistributedDataParallel
with a fixed seed, profiles 4 active steps (wait 1, warmup 1) with `record_shapes=True`, and
writes `OUTDIR/ddp_rank{R}.pt.trace.json.gz` through `tensorboard_trace_handler`. Rank 0 also
writes `OUTDIR/ddp_nccl_expect.json`: per rank, the NCCL kernel count and total ns summed from
its own JSON with `decimal.Decimal`, independently of perfdash.

NVLink multicast stays off, as the GPU machine requires: NCCL_NVLS_ENABLE=0,
TORCH_SYMM_MEM_DISABLE_MULTICAST=1, NVSHMEM_DISABLE_NVLS=1.

How to run (needs >= 2 CUDA GPUs)::

    python3 tests/data/make_ddp_trace.py OUTDIR
"""

from __future__ import annotations

import decimal
import gzip
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

SEED = 1234
WIDTH, LAYERS, BATCH = 2048, 4, 64
ACTIVE = 4


def _nccl_sums(path: Path) -> dict[str, int]:
    with gzip.open(path, "rt") as f:
        doc = json.load(f, parse_float=decimal.Decimal)
    count = total = 0
    for e in doc["traceEvents"]:
        if e.get("cat") == "kernel" and "nccl" in str(e.get("name", "")).lower():
            count += 1
            total += int(decimal.Decimal(e["dur"]) * 1000)
    return {"nccl_kernels": count, "nccl_total_ns": total}


def worker(rank: int, world: int, outdir: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29531")
    dist.init_process_group("nccl", rank=rank, world_size=world)
    torch.cuda.set_device(rank)
    torch.manual_seed(SEED)
    layers: list[nn.Module] = []
    for _ in range(LAYERS):
        layers += [nn.Linear(WIDTH, WIDTH), nn.GELU()]
    model = DistributedDataParallel(nn.Sequential(*layers).cuda(), device_ids=[rank])
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(BATCH, WIDTH, device="cuda")

    def step() -> None:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(x).float().pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    tmp = Path(tempfile.mkdtemp())
    with profile(
        activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
        schedule=schedule(wait=1, warmup=1, active=ACTIVE, repeat=1),
        on_trace_ready=tensorboard_trace_handler(
            str(tmp), worker_name=f"rank{rank}", use_gzip=True
        ),
        record_shapes=True,
    ) as prof:
        for _ in range(ACTIVE + 3):
            step()
            prof.step()
    torch.cuda.synchronize()
    (written,) = tmp.glob("*.pt.trace.json.gz")
    target = Path(outdir) / f"ddp_rank{rank}.pt.trace.json.gz"
    shutil.move(written, target)
    sums = _nccl_sums(target)
    gathered: list[dict[str, int] | None] = [None] * world
    dist.all_gather_object(gathered, sums)
    if rank == 0:
        expect = {f"rank{r}": s for r, s in enumerate(gathered)}
        (Path(outdir) / "ddp_nccl_expect.json").write_text(json.dumps(expect, indent=1) + "\n")
        print(json.dumps(expect))
    dist.destroy_process_group()


def main(argv: list[str]) -> int:
    if len(argv) != 2 or torch.cuda.device_count() < 2:
        print(f"usage: {argv[0]} OUTDIR (needs >= 2 CUDA GPUs)", file=sys.stderr)
        return 2
    for key, value in {
        "NCCL_NVLS_ENABLE": "0",
        "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
        "NVSHMEM_DISABLE_NVLS": "1",
    }.items():
        os.environ[key] = value
    Path(argv[1]).mkdir(parents=True, exist_ok=True)
    world = torch.cuda.device_count()
    mp.spawn(worker, args=(world, argv[1]), nprocs=world, join=True)  # type: ignore[no-untyped-call]
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
