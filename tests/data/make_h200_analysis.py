#!/usr/bin/env python3
"""Make the H200 fixtures for perfdash's analysis views (issue #21), plus torch's own answers.

Purpose
-------
The operator, memory, CUDA-graph, NVTX and Nsight Compute views need genuine traces whose
reference numbers come from the profiler itself, not from perfdash's parser. Three modes:

``ops OUTDIR``
    A two-layer MLP block built from ``nn.Module``s (Linear 1024->4096, GELU, Linear 4096->1024,
    LayerNorm; bf16 autocast; AdamW; fixed seed), one warm-up step outside the profiler, then
    ``schedule(wait=0, warmup=2, active=2)`` with ``record_shapes``, ``profile_memory``,
    ``with_stack`` and ``with_modules``. Writes ``h200_ops_stack.pt.trace.json.gz`` and torch's
    ``key_averages()`` three ways (``.key_averages.json``, ``.key_averages_by_shape.json``,
    ``.memory.json``).
``graph OUTDIR``
    A small MLP forward captured in a ``torch.cuda.CUDAGraph`` and replayed 4 times inside the
    profiler, each replay inside ``record_function("replay_k")`` and an NVTX range ``replay_k``.
    Writes ``h200_cuda_graph.pt.trace.json.gz``, ``.key_averages.json`` and ``.kernel_sums.json``
    (summed from the raw file with ``decimal.Decimal``).
``graph-nsys``
    The same replays without torch.profiler, for ``nsys profile`` (NVTX ranges only).
``ncu``
    Three kernels inside ``cudaProfilerStart/Stop``: a bf16 2048^3 GEMM, a float32 add and a GELU.

How to run: ``bash tests/data/make_h200_analysis.sh OUTDIR`` on the GPU machine.
"""

from __future__ import annotations

import decimal
import gzip
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function, schedule

SEED = 1234
ACTS = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
# (json field, attribute names tried in order); the one found is recorded in the output.
TIME_FIELDS = [
    ("cpu_time_total_us", ("cpu_time_total",)),
    ("self_cpu_time_total_us", ("self_cpu_time_total",)),
    ("device_time_total_us", ("device_time_total", "cuda_time_total")),
    ("self_device_time_total_us", ("self_device_time_total", "self_cuda_time_total")),
]
MEM_FIELDS = [
    ("cpu_memory_usage", ("cpu_memory_usage",)),
    ("self_cpu_memory_usage", ("self_cpu_memory_usage",)),
    ("device_memory_usage", ("device_memory_usage", "cuda_memory_usage")),
    ("self_device_memory_usage", ("self_device_memory_usage", "self_cuda_memory_usage")),
]


def _pick(evt: Any, fields: list[tuple[str, tuple[str, ...]]], used: dict[str, str]) -> dict:
    """Read each field from the first attribute name this torch has, remembering which."""
    out: dict[str, Any] = {}
    for key, names in fields:
        for n in names:
            if hasattr(evt, n):
                out[key] = getattr(evt, n)
                used[key] = n
                break
        else:
            out[key] = None
    return out


def _meta(note: str, used: dict[str, str]) -> dict[str, Any]:
    return {
        "torch_version": torch.__version__,
        "cuda_version": torch.version.cuda,
        "gpu_name": torch.cuda.get_device_name(),
        "attributes_used": used,
        "note": note,
    }


def write_key_averages(prof: profile, outdir: Path, stem: str, shapes: bool) -> None:
    """Every entry of prof.key_averages() (times in us, as torch gives them)."""
    used: dict[str, str] = {}
    rows = []
    for e in prof.key_averages():
        r = {"name": e.key, "device_type": str(e.device_type).split(".")[-1], "count": e.count}
        r.update(_pick(e, TIME_FIELDS, used))
        rows.append(r)
    note = "prof.key_averages(group_by_input_shape=False), every entry, unfiltered"
    doc = _meta(note, used) | {"entries": rows}
    (outdir / f"{stem}.key_averages.json").write_text(json.dumps(doc, indent=1) + "\n")
    if not shapes:
        return
    used = {}
    rows = []
    for e in prof.key_averages(group_by_input_shape=True):
        t = _pick(e, TIME_FIELDS, used)
        rows.append(
            {
                "name": e.key,
                "input_shapes": str(e.input_shapes),
                "count": e.count,
                "cpu_time_total_us": t["cpu_time_total_us"],
                "device_time_total_us": t["device_time_total_us"],
            }
        )
    note = "prof.key_averages(group_by_input_shape=True), every entry; input_shapes is str()"
    doc = _meta(note, used) | {"entries": rows}
    (outdir / f"{stem}.key_averages_by_shape.json").write_text(json.dumps(doc, indent=1) + "\n")
    used = {}
    rows = []
    for e in prof.key_averages():
        m = _pick(e, MEM_FIELDS, used)
        rows.append({"name": e.key, "count": e.count} | m)
    note = "memory per op name from prof.key_averages(), in bytes (negative = freed)"
    doc = _meta(note, used) | {"unit": "bytes", "entries": rows}
    (outdir / f"{stem}.memory.json").write_text(json.dumps(doc, indent=1) + "\n")


def write_kernel_sums(trace_path: Path, path: Path) -> None:
    """Count and total ns per kernel name, straight from the gz JSON (no torch involved)."""
    with gzip.open(trace_path, "rt", encoding="utf-8") as fh:
        trace = json.load(fh, parse_float=decimal.Decimal)
    events = trace.get("traceEvents", [])
    counts: Counter[str] = Counter()
    totals: Counter[str] = Counter()
    for e in events:
        if e.get("cat") == "kernel" and e.get("ph") == "X":
            counts[e["name"]] += 1
            ns = (decimal.Decimal(e["dur"]) * 1000).to_integral_value(decimal.ROUND_HALF_EVEN)
            totals[e["name"]] += int(ns)
    doc = {
        "source_file": trace_path.name,
        "rule": 'cat == "kernel" and ph == "X"; total_ns = sum(dur (us, as Decimal) * 1000)',
        "unit": "ns",
        "kernel_event_count": sum(counts.values()),
        "kernel_total_ns": sum(totals.values()),
        "event_counts_by_cat": dict(sorted(Counter(str(e.get("cat")) for e in events).items())),
        "kernels": [
            {"name": n, "count": counts[n], "total_ns": totals[n]}
            for n in sorted(counts, key=lambda n: (-totals[n], n))
        ],
    }
    path.write_text(json.dumps(doc, indent=1) + "\n")


class Block(nn.Module):
    """Two Linear layers with GELU between and a LayerNorm after: named modules for with_modules."""

    def __init__(self, d: int, h: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(d, h)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(h, d)
        self.norm = nn.LayerNorm(d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x + self.fc2(self.act(self.fc1(x))))


def run_ops(outdir: Path) -> None:
    torch.manual_seed(SEED)
    model = Block(1024, 4096).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(256, 1024, device="cuda")
    y = torch.randn(256, 1024, device="cuda")
    stem = "h200_ops_stack"

    def step() -> None:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = nn.functional.mse_loss(model(x).float(), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()

    step()  # warm-up outside the profiler: cuBLAS handles, AdamW state

    def ready(p: profile) -> None:
        p.export_chrome_trace(str(outdir / f"{stem}.pt.trace.json.gz"))
        write_key_averages(p, outdir, stem, shapes=True)

    with profile(
        activities=ACTS,
        schedule=schedule(wait=0, warmup=2, active=2, repeat=1),
        on_trace_ready=ready,
        record_shapes=True,
        profile_memory=True,
        with_stack=True,
        with_modules=True,
    ) as p:
        for _ in range(4):
            step()
            p.step()


def _graph() -> tuple[torch.cuda.CUDAGraph, torch.Tensor, torch.Tensor]:
    """Capture a small bf16 MLP forward in a CUDA graph (warm-up on a side stream first)."""
    torch.manual_seed(SEED)
    model = nn.Sequential(nn.Linear(512, 2048), nn.GELU(), nn.Linear(2048, 512), nn.LayerNorm(512))
    model = model.cuda().to(torch.bfloat16).eval()
    static_in = torch.randn(128, 512, device="cuda", dtype=torch.bfloat16)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.no_grad(), torch.cuda.stream(side):
        for _ in range(3):
            model(static_in)
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(g):
        static_out = model(static_in)
    torch.cuda.synchronize()
    return g, static_in, static_out


def _replays(g: torch.cuda.CUDAGraph, static_in: torch.Tensor, n: int = 4) -> None:
    for k in range(n):
        torch.cuda.nvtx.range_push(f"replay_{k}")
        with record_function(f"replay_{k}"):
            static_in.mul_(0.5)  # new input each replay, outside the graph
            g.replay()
        torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()


def run_graph(outdir: Path | None) -> None:
    if outdir is None:  # under nsys: no torch.profiler
        g, static_in, _ = _graph()
        _replays(g, static_in)
        return
    with profile(activities=ACTS):  # start CUPTI before the capture; this session is dropped
        torch.zeros(1, device="cuda")
        torch.cuda.synchronize()
    g, static_in, _ = _graph()
    stem = "h200_cuda_graph"
    with profile(activities=ACTS, record_shapes=True) as p:
        _replays(g, static_in)
    trace = outdir / f"{stem}.pt.trace.json.gz"
    p.export_chrome_trace(str(trace))
    write_key_averages(p, outdir, stem, shapes=False)
    write_kernel_sums(trace, outdir / f"{stem}.kernel_sums.json")


def run_ncu() -> None:
    torch.manual_seed(SEED)
    a = torch.randn(2048, 2048, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(2048, 2048, device="cuda", dtype=torch.bfloat16)
    u = torch.randn(1 << 24, device="cuda")
    v = torch.randn(1 << 24, device="cuda")
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    c = a @ b
    w = u + v
    z = nn.functional.gelu(w)
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    print(float(c.float().sum()) + float(z.sum()))


def main(argv: list[str]) -> int:
    mode = argv[1] if len(argv) > 1 else ""
    out = Path(argv[2]) if len(argv) > 2 else None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    if mode == "ops" and out is not None:
        run_ops(out)
    elif mode == "graph" and out is not None:
        run_graph(out)
    elif mode == "graph-nsys":
        run_graph(None)
    elif mode == "ncu":
        run_ncu()
    else:
        print(f"usage: {argv[0]} ops|graph OUTDIR | graph-nsys | ncu", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
