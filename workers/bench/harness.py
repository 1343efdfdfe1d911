"""Timing and memory measurement shared by every built-in workload.

On CUDA each measured iteration is bracketed by a pair of CUDA events recorded on the
current stream, after a synchronised warm-up; the host waits once at the end, so the
samples are GPU time and the launch queue stays full. Stateless phases get an L2 flush (a
256 MB write, outside the timed window) before each iteration, as `triton.testing.do_bench`
does: every sample is cold-cache, and the flush's short low-power gaps keep the clocks where
do_bench sees them (without it, a back-to-back 2048x8192x8192 bf16 GEMM read 5-8% lower on
the H200, docs/BENCHMARKS.md). On CPU the harness falls back to `time.perf_counter` around
each (synchronous) iteration.
"""

from __future__ import annotations

import contextlib
import gzip
import shutil
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path

import torch

Step = Callable[[], object]
MIN_WARMUP_S = 0.2
L2_FLUSH_BYTES = 256 * 1024**2  # do_bench's size; larger than any GPU's L2 (H200: 50 MB)


@dataclass
class Timing:
    """Per-iteration samples in milliseconds and the clock that measured them."""

    samples_ms: list[float]
    timer: str


@dataclass
class Memory:
    """Peak device memory over one sweep point (None on CPU)."""

    max_allocated: int | None = None
    max_reserved: int | None = None

    @property
    def fragmentation_pct(self) -> float | None:
        """Reserved-but-unallocated share of the reserved peak, in percent."""
        if not self.max_reserved or self.max_allocated is None:
            return None
        return 100.0 * (1.0 - self.max_allocated / self.max_reserved)


@dataclass
class Phase:
    """One timed thing a workload does per iteration, and what one iteration is worth."""

    step: Step
    time_metric: str = "time_ms"
    flops: float = 0.0
    flops_metric: str | None = None
    bytes: float = 0.0
    bandwidth_metric: str | None = None
    items: float = 0.0
    items_metric: str | None = None
    stateful: bool = False  # True when each call changes state (an optimiser step)


@dataclass
class Workload:
    """What `prepare` of a built-in workload returns: phases, and what to hash after them."""

    phases: list[Phase]
    outputs: Callable[[], list[torch.Tensor]]
    notes: dict[str, object] = field(default_factory=dict)


def resolve_device(name: str) -> torch.device:
    """`auto` is the first GPU when there is one, else the CPU."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(name)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(f"device {name!r} was asked for but torch sees no CUDA device")
    return device


def synchronize(device: torch.device) -> None:
    """Wait for queued device work; a no-op on CPU."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def warm_up(step: Step, *, device: torch.device, warmup: int, min_s: float = 0.0) -> None:
    """`warmup` untimed iterations and, on a GPU, at least `min_s` seconds of them.

    An idle GPU sits at a low clock and takes tens of milliseconds to reach its boost
    clock; a count alone (10 short GEMMs are 2 ms) would time the ramp. do_bench warms
    up by time for the same reason. A stateful step (training) must pass `min_s=0`:
    a varying number of steps would change the state the determinism hash covers.
    """
    start, done = time.perf_counter(), 0
    while done < warmup or (device.type == "cuda" and time.perf_counter() - start < min_s):
        step()
        done += 1
        if device.type == "cuda" and done % 8 == 0:
            synchronize(device)  # so the host clock tracks the GPU, not the launch queue
    synchronize(device)


class L2Flusher:
    """Evicts the GPU's L2 by writing a buffer larger than it; allocated once per run."""

    def __init__(self, device: torch.device) -> None:
        self.buffer = torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.int32, device=device)

    def __call__(self) -> None:
        self.buffer.zero_()


def measure(
    step: Step,
    *,
    device: torch.device,
    warmup: int,
    iters: int,
    min_warmup_s: float = 0.0,
    flush: Callable[[], None] | None = None,
    window: AbstractContextManager[None] | None = None,
) -> Timing:
    """Warm up (see `warm_up`), synchronise, then time `iters` iterations.

    `flush`, when given, runs before each timed iteration, outside its events. `window`
    (the GPU guard's sampler) is entered right before the timed loop and left after the
    final synchronise, so it spans exactly the GPU work that was timed.
    """
    warm_up(step, device=device, warmup=warmup, min_s=min_warmup_s)
    timed = window or contextlib.nullcontext()
    if device.type != "cuda":
        samples = []
        with timed:
            for _ in range(iters):
                start = time.perf_counter()
                step()
                samples.append((time.perf_counter() - start) * 1e3)
        return Timing(samples, "perf_counter")
    # torch ships Event without annotations.
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]  # type: ignore[no-untyped-call]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]  # type: ignore[no-untyped-call]
    with timed:
        for start_event, end_event in zip(starts, ends, strict=True):
            if flush is not None:
                flush()
            start_event.record()
            step()
            end_event.record()
        synchronize(device)
    return Timing([s.elapsed_time(e) for s, e in zip(starts, ends, strict=True)], "cuda_events")


def reset_memory(device: torch.device) -> None:
    """Start a fresh peak-memory window."""
    if device.type == "cuda":
        synchronize(device)
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)


def read_memory(device: torch.device, exclude_bytes: int = 0) -> Memory:
    """Peak allocated and reserved bytes since `reset_memory`, less `exclude_bytes` (the
    harness's own L2-flush buffer, which is not the workload's memory)."""
    if device.type != "cuda":
        return Memory()
    return Memory(
        torch.cuda.max_memory_allocated(device) - exclude_bytes,
        torch.cuda.max_memory_reserved(device) - exclude_bytes,
    )


def profile_steps(step: Step, *, device: torch.device, out_dir: Path, steps: int = 3) -> Path:
    """Record `steps` iterations with torch.profiler into a gzipped Kineto JSON file."""
    activities = [torch.profiler.ProfilerActivity.CPU]
    if device.type == "cuda":
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(
        activities=activities, record_shapes=True, with_flops=True, profile_memory=True
    ) as prof:
        for _ in range(steps):
            step()
            synchronize(device)
    raw = out_dir / "benchmark.pt.trace.json"
    prof.export_chrome_trace(str(raw))
    packed = raw.with_suffix(".json.gz")
    with raw.open("rb") as src, gzip.open(packed, "wb") as dst:
        shutil.copyfileobj(src, dst)
    raw.unlink()
    return packed
