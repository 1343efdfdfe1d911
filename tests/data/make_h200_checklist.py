#!/usr/bin/env python3
"""Make issue #26's GPU fixtures: a PyTorch memory snapshot and a torch.compile trace.

Run on a CUDA machine (torch with Triton)::

    python3 tests/data/make_h200_checklist.py memsnap OUTDIR
    python3 tests/data/make_h200_checklist.py compile OUTDIR

``memsnap`` writes
    ``h200_memsnap.pickle``: what ``torch.cuda.memory._dump_snapshot`` wrote for a small
        training loop (two steps) whose forward keeps activations of changing sizes and
        frees every other one, so the caching allocator's segments hold free holes
        (a deliberately fragmenting pattern). Phases are marked with
        ``record_function`` ("forward", "backward", "optimizer"), which the allocator
        history records as annotations.
    ``h200_memsnap.pt.trace.json.gz``: the torch.profiler trace of the same two steps
        (``profile_memory=True``), for the "uploaded together" link.
    ``h200_memsnap.expected.json``: what torch itself says after the loop:
        ``torch.cuda.max_memory_allocated``/``max_memory_reserved`` and
        ``torch.cuda.memory_stats`` peaks, as an independent source for tests.

``compile`` writes
    ``h200_compile.pt.trace.json.gz``: torch.profiler over the first calls of a compiled
        model with one graph break (``torch._dynamo.graph_break()``) and one recompile (a
        second batch size with ``dynamic=False``), then a few steady calls.
    ``h200_compile.compile_times.json``: ``torch._dynamo.utils.compile_times(repr="csv")``
        (the table perfdash documents how to push as metrics) and the
        wall time of the compiling calls and of the steady calls, measured with
        ``time.perf_counter_ns`` around them, as the independent check.
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

SEED = 26


def _gzip_trace(prof: profile, out: Path) -> None:
    raw = out.with_suffix("")  # strip .gz
    prof.export_chrome_trace(str(raw))
    with raw.open("rb") as src, gzip.open(out, "wb", compresslevel=9) as dst:
        shutil.copyfileobj(src, dst)
    raw.unlink()


def memsnap(outdir: Path) -> None:
    """Two training steps with a fragmenting activation pattern, recorded three ways."""
    torch.manual_seed(SEED)
    dev = torch.device("cuda")
    model = nn.Sequential(*[nn.Linear(2048, 2048) for _ in range(6)]).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    torch.cuda.memory._record_memory_history(max_entries=40_000, stacks="python")
    torch.cuda.reset_peak_memory_stats()
    acts = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
    with profile(activities=acts, profile_memory=True, record_shapes=True) as prof:
        for step in range(2):
            with record_function(f"train_step_{step}"):
                keep: list[torch.Tensor] = []
                with record_function("forward"):
                    x = torch.randn(1024 + 256 * step, 2048, device=dev)
                    for i, layer in enumerate(model):
                        x = torch.relu(layer(x))
                        # odd-sized scratch buffers, every other one freed: holes
                        scratch = torch.empty((3 + i) * 1_000_003, dtype=torch.uint8, device=dev)
                        if i % 2 == 0:
                            keep.append(scratch)
                        del scratch
                    loss = x.float().pow(2).mean()
                with record_function("backward"):
                    loss.backward()
                with record_function("optimizer"):
                    opt.step()
                    opt.zero_grad(set_to_none=True)
                del keep
            torch.cuda.synchronize()
    torch.cuda.memory._dump_snapshot(str(outdir / "h200_memsnap.pickle"))
    torch.cuda.memory._record_memory_history(enabled=None)
    _gzip_trace(prof, outdir / "h200_memsnap.pt.trace.json.gz")
    stats = torch.cuda.memory_stats()
    expected = {
        "max_memory_allocated": torch.cuda.max_memory_allocated(),
        "max_memory_reserved": torch.cuda.max_memory_reserved(),
        "memory_allocated_at_dump": torch.cuda.memory_allocated(),
        "memory_reserved_at_dump": torch.cuda.memory_reserved(),
        "stats": {k: v for k, v in stats.items() if k.endswith((".all.peak", ".all.current"))},
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(),
    }
    (outdir / "h200_memsnap.expected.json").write_text(json.dumps(expected, indent=1))


class _Breaky(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(1024, 1024)
        self.b = nn.Linear(1024, 1024)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.a(x))
        torch._dynamo.graph_break()  # one graph break: two graphs per call
        return torch.relu(self.b(x))


def compile_trace(outdir: Path) -> None:
    """First calls compile (two graphs), a new batch size recompiles, then steady calls."""
    torch.manual_seed(SEED)
    dev = torch.device("cuda")
    model = _Breaky().to(dev)
    fn = torch.compile(model, dynamic=False)
    acts = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
    timings: dict[str, int] = {}
    with profile(activities=acts) as prof:
        t0 = time.perf_counter_ns()
        with record_function("first_call"):
            fn(torch.randn(64, 1024, device=dev))
            torch.cuda.synchronize()
        t1 = time.perf_counter_ns()
        with record_function("recompile_call"):
            fn(torch.randn(96, 1024, device=dev))  # new static shape: recompile
            torch.cuda.synchronize()
        t2 = time.perf_counter_ns()
        with record_function("steady_calls"):
            for _ in range(5):
                fn(torch.randn(96, 1024, device=dev))
            torch.cuda.synchronize()
        t3 = time.perf_counter_ns()
    timings = {"first_call_ns": t1 - t0, "recompile_call_ns": t2 - t1, "steady_calls_ns": t3 - t2}
    _gzip_trace(prof, outdir / "h200_compile.pt.trace.json.gz")
    from torch._dynamo.utils import compile_times

    doc = {
        "compile_times_csv": compile_times(repr="csv", aggregate=True),
        "compile_times_str": compile_times(repr="str", aggregate=True),
        "wall": timings,
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(),
    }
    (outdir / "h200_compile.compile_times.json").write_text(json.dumps(doc, indent=1, default=str))


def main() -> None:
    what, outdir = sys.argv[1], Path(sys.argv[2])
    outdir.mkdir(parents=True, exist_ok=True)
    {"memsnap": memsnap, "compile": compile_trace}[what](outdir)


if __name__ == "__main__":
    main()
