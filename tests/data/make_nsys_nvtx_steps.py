#!/usr/bin/env python3
"""Workload for the Nsight Systems numbered-NVTX-steps fixture (`tests/data/nsys/nvtx_steps.*`).

Run under `nsys profile` by `tests/data/make_gpu_fixtures.sh nvtx_steps`. perfdash must find
steps in an nsys export whose steps are NVTX ranges named with a numeric suffix (issue #20,
item 1): here `train_step_0` .. `train_step_4`, each holding nested `forward`, `backward` and
`optimizer` ranges, after one `warmup` range. The model is a small MLP (bf16 autocast, AdamW),
eager. Each step ends with `torch.cuda.synchronize()` inside its range, so the range's duration
is the step's wall time.

Independent check, written to the JSON path given as the only argument: for every step, the
host wall time around the range push..pop (`time.perf_counter_ns`) and the GPU time between
two `torch.cuda.Event`s at the start and the end of the step's work.

Fixed seed; needs one CUDA GPU and torch.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import torch
from torch import nn

STEPS = 5
SEED = 1234
BATCH, WIDTH, HIDDEN = 4096, 1024, 4096
nvtx = torch.cuda.nvtx


def main(argv: list[str]) -> int:
    """Run the warm-up and the numbered steps; write the measured step times."""
    if len(argv) != 2:
        return 2
    torch.manual_seed(SEED)
    dev = torch.device("cuda", 0)
    model = nn.Sequential(
        nn.Linear(WIDTH, HIDDEN), nn.GELU(), nn.Linear(HIDDEN, WIDTH), nn.LayerNorm(WIDTH)
    ).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(BATCH, WIDTH, device=dev)

    def train_step() -> None:
        nvtx.range_push("forward")
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(x).float().pow(2).mean()
        nvtx.range_pop()
        nvtx.range_push("backward")
        loss.backward()
        nvtx.range_pop()
        nvtx.range_push("optimizer")
        opt.step()
        opt.zero_grad(set_to_none=True)
        nvtx.range_pop()

    nvtx.range_push("warmup")
    train_step()
    torch.cuda.synchronize()
    nvtx.range_pop()

    measured = []
    for step in range(STEPS):
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0 = time.perf_counter_ns()
        nvtx.range_push(f"train_step_{step}")
        begin.record()
        train_step()
        end.record()
        torch.cuda.synchronize()
        nvtx.range_pop()
        t1 = time.perf_counter_ns()
        gpu_ns = round(begin.elapsed_time(end) * 1e6)
        measured.append({"step": step, "wall_ns": t1 - t0, "cuda_event_ns": gpu_ns})
    check = {
        "marker": "train_step_N",
        "steps": measured,
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(dev),
    }
    Path(argv[1]).write_text(json.dumps(check, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
