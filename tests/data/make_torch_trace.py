#!/usr/bin/env python3
"""Make a small, real torch.profiler (Kineto JSON) trace on a CUDA GPU, plus reference answers.

Purpose
-------
perfdash's tests need a genuine Kineto trace as produced by ``torch.profiler`` on real
hardware, together with answers that were computed independently of perfdash's own parser.
This script runs a tiny, fixed-seed workload on ``cuda`` that launches a variety of GPU
activity -- bf16 and fp32 GEMMs, an elementwise op, softmax, layernorm, host-to-device
copies from pinned and from pageable memory, device-to-host copies, ``torch.zeros`` on the
GPU and an explicit ``cudaMemsetAsync`` -- under a profiler schedule of wait=1, warmup=1,
active=3 (so ``ProfilerStep#N`` annotations appear), with ``record_shapes=True`` and
``profile_memory=True``.

It writes three files into OUTDIR:

``h200_train_step.pt.trace.json.gz``
    The trace, exported by ``prof.export_chrome_trace`` (gzip-compressed Kineto JSON).
``h200_train_step.key_averages.json``
    torch's own aggregate (``prof.key_averages()``): every entry whose self device time is
    greater than zero, with its name, call count and device times in microseconds.
``h200_train_step.kernel_sums.json``
    An independent sum taken straight from the exported JSON file: for every event with
    ``cat == "kernel"`` and ``ph == "X"``, the count and the total duration in integer
    nanoseconds per kernel name (the JSON is parsed with ``decimal.Decimal`` so no float
    rounding creeps in), sorted by total descending.

How to run (needs a CUDA GPU and torch)::

    python3 tests/data/make_torch_trace.py OUTDIR

The file names say "h200" because the committed fixtures were made on an NVIDIA H200; the
script itself runs on any CUDA GPU.
"""

from __future__ import annotations

import ctypes
import decimal
import gzip
import json
import subprocess
import sys
import traceback
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile, record_function, schedule

STEM = "h200_train_step"
TRACE_NAME = f"{STEM}.pt.trace.json.gz"
KEY_AVERAGES_NAME = f"{STEM}.key_averages.json"
KERNEL_SUMS_NAME = f"{STEM}.kernel_sums.json"

SEED = 1234
WAIT, WARMUP, ACTIVE = 1, 1, 3
NUM_STEPS = WAIT + WARMUP + ACTIVE + 1  # one spare step after the active window

M, K, N = 512, 1024, 1024  # bf16 GEMM: (M x K) @ (K x N)
F32 = 512  # fp32 GEMM: (F32 x F32) @ (F32 x F32)
COPY_ELEMS = 1 << 20  # 4 MiB of fp32 per host-to-device copy
MEMSET_BYTES = 1 << 20

# Top-level keys of the exported JSON that must never reach a committed fixture.
SUSPICIOUS_KEY_PARTS = ("env", "environ", "secret", "token", "password", "hostname", "user")


def _load_memset() -> tuple[str, Callable[[int, int, int, int], int]]:
    """Return (label, fn(ptr, value, nbytes, stream) -> error code) issuing an async memset.

    ``torch.zeros`` on CUDA is a fill kernel, not a memset, so to get a real ``gpu_memset``
    activity into the trace the CUDA runtime (or, failing that, the driver) is called directly.
    """
    for soname in ("libcudart.so.13", "libcudart.so.12", "libcudart.so"):
        try:
            lib = ctypes.CDLL(soname)
        except OSError:
            continue
        fn = lib.cudaMemsetAsync
        fn.restype = ctypes.c_int
        fn.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t, ctypes.c_void_p]
        return f"{soname}:cudaMemsetAsync", lambda p, v, n, s, fn=fn: int(fn(p, v, n, s))
    drv = ctypes.CDLL("libcuda.so.1")
    dfn = drv.cuMemsetD8Async
    dfn.restype = ctypes.c_int
    dfn.argtypes = [ctypes.c_uint64, ctypes.c_ubyte, ctypes.c_size_t, ctypes.c_void_p]
    return "libcuda.so.1:cuMemsetD8Async", lambda p, v, n, s: int(dfn(p, v, n, s))


class Workload:
    """Fixed-seed tensors and one 'step' of assorted GPU work."""

    def __init__(self, device: torch.device) -> None:
        torch.manual_seed(SEED)
        torch.cuda.manual_seed_all(SEED)
        self.device = device
        self.a16 = torch.randn(M, K, device=device, dtype=torch.bfloat16)
        self.b16 = torch.randn(K, N, device=device, dtype=torch.bfloat16)
        self.a32 = torch.randn(F32, F32, device=device)
        self.b32 = torch.randn(F32, F32, device=device)
        self.ln_weight = torch.ones(N, device=device)
        self.ln_bias = torch.zeros(N, device=device)
        self.host_pinned = torch.randn(COPY_ELEMS).pin_memory()
        self.host_pageable = torch.randn(COPY_ELEMS)
        self.d2h_pinned = torch.empty(M, N, dtype=torch.float32).pin_memory()
        self.memset_buf = torch.empty(MEMSET_BYTES, dtype=torch.uint8, device=device)
        self._memset: Callable[[int, int, int, int], int] | None
        try:
            self.memset_label, self._memset = _load_memset()
        except OSError as exc:
            print(f"WARNING: no CUDA library for an explicit memset: {exc}")
            self.memset_label, self._memset = "none", None

    def step(self) -> float:
        """Run one step of work and return a scalar (so nothing is optimised away)."""
        with record_function("h2d_copies"):
            x_pinned = self.host_pinned.to(self.device, non_blocking=True)
            x_pageable = self.host_pageable.to(self.device)
        with record_function("memsets"):
            zeros = torch.zeros(COPY_ELEMS, device=self.device)
            stream = torch.cuda.current_stream(self.device).cuda_stream
            if self._memset is not None:
                err = self._memset(self.memset_buf.data_ptr(), 0, MEMSET_BYTES, stream)
                if err != 0:  # keep going: the rest of the trace is still useful
                    print(f"WARNING: {self.memset_label} returned {err}; memset disabled")
                    self._memset = None
        with record_function("compute"):
            h16 = self.a16 @ self.b16  # bf16 GEMM
            h16b = h16[:, :K] @ self.b16  # a second bf16 GEMM
            h32 = self.a32 @ self.b32  # fp32 GEMM
            act = F.gelu(h16b.float()) * 0.5 + 1.0  # elementwise ops
            probs = torch.softmax(act, dim=-1)
            normed = F.layer_norm(probs, (N,), self.ln_weight, self.ln_bias)
            mixed = normed + (x_pinned + x_pageable + zeros).view(M * 2, N)[:M]
            total = mixed.sum() + h32.sum()
        with record_function("d2h_copies"):
            pageable_out = mixed.to("cpu")
            self.d2h_pinned.copy_(mixed, non_blocking=True)
            torch.cuda.synchronize(self.device)
        return float(total.item()) + float(pageable_out[0, 0])


def _device_times(evt: Any) -> tuple[float, float]:
    """Return (self_device_time_total, device_time_total) in us, across torch versions."""
    self_t = getattr(evt, "self_device_time_total", None)
    if self_t is None:
        self_t = getattr(evt, "self_cuda_time_total", None)
    tot = getattr(evt, "device_time_total", None)
    if tot is None:
        tot = getattr(evt, "cuda_time_total", None)
    return float(self_t or 0.0), float(tot or 0.0)


def _driver_version() -> str | None:
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip().splitlines()[0] if out.stdout.strip() else None


def write_key_averages(prof: profile, path: Path, memset_label: str) -> None:
    """Write torch's own aggregate: entries whose self device time is > 0."""
    entries: list[dict[str, Any]] = []
    for evt in prof.key_averages():
        self_t, tot = _device_times(evt)
        if self_t <= 0:
            continue
        entries.append(
            {
                "name": evt.key,
                "device_type": str(getattr(evt, "device_type", "")).split(".")[-1],
                "count": int(evt.count),
                "self_device_time_total_us": self_t,
                "device_time_total_us": tot,
            }
        )
    entries.sort(key=lambda e: (-e["self_device_time_total_us"], e["name"]))
    doc = {
        "torch_version": torch.__version__,
        "cuda_version": torch.version.cuda,
        "gpu_name": torch.cuda.get_device_name(),
        "driver_version": _driver_version(),
        "memset_via": memset_label,
        "note": (
            "From torch.profiler's prof.key_averages() over the 3 active steps. One entry per "
            "distinct name with self device (CUDA) time > 0. device_type CUDA entries are GPU "
            "activities (kernels, memcpy, memset) named as in the trace; their count is the number "
            "of activities and self_device_time_total_us (== device_time_total_us) their summed "
            "GPU duration in microseconds (floats, as torch computes them). device_type CPU "
            "entries are operators/annotations whose launched GPU work is attributed to them and "
            "not to a child operator; do not add the two kinds together."
        ),
        "entries": entries,
    }
    path.write_text(json.dumps(doc, indent=1) + "\n")


def _us_to_ns(value: decimal.Decimal | int) -> int:
    ns = decimal.Decimal(value) * 1000
    return int(ns.to_integral_value(rounding=decimal.ROUND_HALF_EVEN))


def write_kernel_sums(trace_path: Path, path: Path) -> dict[str, Any]:
    """Sum kernel events straight from the exported gz JSON, independently of torch."""
    with gzip.open(trace_path, "rt", encoding="utf-8") as fh:
        trace = json.load(fh, parse_float=decimal.Decimal)
    events = trace.get("traceEvents", [])
    cats = Counter(str(e.get("cat", "<none>")) for e in events)
    counts: Counter[str] = Counter()
    totals: Counter[str] = Counter()
    for e in events:
        if e.get("cat") == "kernel" and e.get("ph") == "X":
            counts[e["name"]] += 1
            totals[e["name"]] += _us_to_ns(e["dur"])
    kernels = [
        {"name": name, "count": counts[name], "total_ns": totals[name]}
        for name in sorted(counts, key=lambda n: (-totals[n], n))
    ]
    suspicious = [k for k in trace if any(p in k.lower() for p in SUSPICIOUS_KEY_PARTS)]
    doc = {
        "source_file": trace_path.name,
        "rule": 'cat == "kernel" and ph == "X"; total_ns = sum(dur (us, as Decimal) * 1000)',
        "unit": "ns",
        "kernel_event_count": sum(counts.values()),
        "kernel_total_ns": sum(totals.values()),
        "event_counts_by_cat": dict(sorted(cats.items())),
        "top_level_keys": sorted(trace.keys()),
        "suspicious_top_level_keys": suspicious,
        "kernels": kernels,
    }
    path.write_text(json.dumps(doc, indent=1) + "\n")
    return doc


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(f"usage: {argv[0]} OUTDIR", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("error: CUDA is not available", file=sys.stderr)
        return 1
    outdir = Path(argv[1])
    outdir.mkdir(parents=True, exist_ok=True)
    trace_path = outdir / TRACE_NAME
    device = torch.device("cuda")

    work = Workload(device)
    for _ in range(2):  # warm cuBLAS / allocator outside the profiler
        work.step()
    torch.cuda.synchronize()

    def on_trace_ready(prof: profile) -> None:
        prof.export_chrome_trace(str(trace_path))
        try:
            write_key_averages(prof, outdir / KEY_AVERAGES_NAME, work.memset_label)
        except Exception:  # keep the trace and the raw sums even if this fails
            traceback.print_exc()

    with profile(
        activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
        schedule=schedule(wait=WAIT, warmup=WARMUP, active=ACTIVE, repeat=1),
        on_trace_ready=on_trace_ready,
        record_shapes=True,
        profile_memory=True,
    ) as prof:
        for _ in range(NUM_STEPS):
            work.step()
            prof.step()

    sums = write_kernel_sums(trace_path, outdir / KERNEL_SUMS_NAME)
    gpu = torch.cuda.get_device_name()
    print(f"torch {torch.__version__} on {gpu}; memset via {work.memset_label}")
    print(f"trace: {trace_path} ({trace_path.stat().st_size} bytes)")
    print("event counts by cat:", json.dumps(sums["event_counts_by_cat"]))
    print("suspicious top-level keys:", sums["suspicious_top_level_keys"])
    print(f"{'count':>5} {'total_ns':>10}  kernel")
    for k in sums["kernels"][:15]:
        print(f"{k['count']:>5} {k['total_ns']:>10}  {k['name'][:140]}")
    missing = {"kernel", "gpu_memcpy", "gpu_memset", "cuda_runtime", "cpu_op", "user_annotation"}
    missing -= set(sums["event_counts_by_cat"])
    if missing:
        print("WARNING: categories missing from the trace:", sorted(missing))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
