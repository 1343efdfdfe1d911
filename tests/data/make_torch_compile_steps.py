#!/usr/bin/env python3
"""Make a `torch.compile` torch.profiler trace whose steps are marked only by `record_function`.

Purpose
-------
perfdash must find steps in traces that have no `ProfilerStep#N` (issue #20, item 1). A
common case is a `torch.compile` training loop whose user wraps each step in
``record_function("compiled_step")`` and profiles it without a profiler schedule, so no
`ProfilerStep#N` is ever emitted. This script makes exactly that trace on a CUDA GPU: a small
MLP (bf16 autocast, AdamW) compiled with `torch.compile`, two warm-up steps outside the profiler
(compilation happens there), then STEPS profiled steps, each inside
``record_function("compiled_step")``. Each step ends with `torch.cuda.synchronize()` inside the
range, so the range's CPU duration is the step's wall time.

Independent check: for every profiled step the script also measures, without the profiler's
help, the host wall time around the whole ``with record_function(...)`` block
(`time.perf_counter_ns`) and the GPU time between two `torch.cuda.Event`s recorded at the
start and the end of the step's work. Tests compare perfdash's step durations with these.

Writes into OUTDIR:

``h200_compiled_steps.pt.trace.json.gz``
    The trace (`prof.export_chrome_trace`, gzip-compressed Kineto JSON).
``h200_compiled_steps.steps.json``
    ``{"marker", "steps": [{"step", "wall_ns", "cuda_event_ns"}], "torch", "device"}``.

Run (needs a CUDA GPU, torch and Triton)::

    python3 tests/data/make_torch_compile_steps.py OUTDIR
"""

from __future__ import annotations

import gzip
import json
import shutil
import sys
import time
from pathlib import Path

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function

STEM = "h200_compiled_steps"
MARKER = "compiled_step"
STEPS = 4
WARMUP = 2
SEED = 1234
BATCH, WIDTH, HIDDEN = 4096, 1024, 4096


def _model(dev: torch.device) -> nn.Module:
    return nn.Sequential(
        nn.Linear(WIDTH, HIDDEN), nn.GELU(), nn.Linear(HIDDEN, WIDTH), nn.LayerNorm(WIDTH)
    ).to(dev)


def main(argv: list[str]) -> int:
    """Run the loop, write the trace and the independent step times."""
    if len(argv) != 2:
        print(__doc__)
        return 2
    out = Path(argv[1])
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(SEED)
    dev = torch.device("cuda", 0)
    model = _model(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    compiled = torch.compile(model)
    x = torch.randn(BATCH, WIDTH, device=dev)

    def train_step() -> None:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = compiled(x).float().pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(WARMUP):
        train_step()
    torch.cuda.synchronize()

    measured = []
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for step in range(STEPS):
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            t0 = time.perf_counter_ns()
            with record_function(MARKER):
                begin.record()
                train_step()
                end.record()
                torch.cuda.synchronize()
            t1 = time.perf_counter_ns()
            gpu_ns = round(begin.elapsed_time(end) * 1e6)
            measured.append({"step": step, "wall_ns": t1 - t0, "cuda_event_ns": gpu_ns})
            print(f"step {step}: wall {(t1 - t0) / 1e6:.3f} ms, cuda events {gpu_ns / 1e6:.3f} ms")

    plain = out / f"{STEM}.pt.trace.json"
    prof.export_chrome_trace(str(plain))
    with plain.open("rb") as src, gzip.open(out / f"{STEM}.pt.trace.json.gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    plain.unlink()
    check = {
        "marker": MARKER,
        "steps": measured,
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(dev),
        "note": "wall_ns: perf_counter_ns around the record_function block (it ends with "
        "torch.cuda.synchronize); cuda_event_ns: torch.cuda.Event at the step's start and end",
    }
    (out / f"{STEM}.steps.json").write_text(json.dumps(check, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
