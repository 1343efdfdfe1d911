"""`python -m workers.bench.run REQUEST.json OUT_DIR`: execute one benchmark run.

Runs in its own process, started by the Celery task, so a CUDA fault, an OOM or a hard
kill takes down this process and not the worker, and every run starts with a clean CUDA
context. Writes `OUT_DIR/result.json` (see `docs/BENCHMARKS.md`), and the profiler trace
next to it when the spec asks for one. A handled failure still writes a result, with a
`reason` (`oom`, `error`) the task records.
"""

from __future__ import annotations

import json
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from workers.bench import fingerprint
from workers.bench.determinism import combine_digests, seed_everything, tensor_digest
from workers.bench.external import load_callable, run_command, split_callable_result
from workers.bench.gpu_flags import Rules
from workers.bench.guard import Guard
from workers.bench.harness import (
    L2_FLUSH_BYTES,
    MIN_WARMUP_S,
    L2Flusher,
    measure,
    profile_steps,
    read_memory,
    reset_memory,
    resolve_device,
    synchronize,
)
from workers.bench.points import memory_points, rate_points, samples_point, value_point
from workers.bench.spec import RunRequest
from workers.bench.sweep import expand_sweep, point_label
from workers.bench.workloads import ALLREDUCE, BUILTINS
from workers.bench.workloads.allreduce import default_world_size, measure_allreduce

STATEFUL_SETTLE = "stateful workload: extra steps would change the determinism hash"


def _chunk(step: Callable[[], object], device: torch.device) -> Callable[[], None]:
    """A few steps and a synchronise: one unit of `settle`'s warm-up."""

    def chunk() -> None:
        for _ in range(8):
            step()
        synchronize(device)

    return chunk


def run_builtin(
    req: RunRequest,
    params: dict[str, Any],
    device: torch.device,
    trace_dir: Path | None,
    guard: Guard,
) -> dict[str, Any]:
    """Measure every phase of a built-in workload at one sweep point."""
    if req.workload not in BUILTINS:
        raise ValueError(f"unknown built-in workload {req.workload!r}; known: {sorted(BUILTINS)}")
    flush = L2Flusher(device) if device.type == "cuda" else None
    reset_memory(device)
    work = BUILTINS[req.workload](params, device)
    first = work.phases[0]
    if first.stateful:
        guard.settle_once(None, STATEFUL_SETTLE)
    else:
        guard.settle_once(_chunk(first.step, device))
    metrics: list[dict[str, Any]] = []
    counts: dict[str, float] = {}
    for phase in work.phases:
        timing = measure(
            phase.step,
            device=device,
            warmup=req.warmup,
            iters=req.iters,
            min_warmup_s=0.0 if phase.stateful else MIN_WARMUP_S,
            flush=None if phase.stateful else flush,
            window=guard.window(phase.time_metric),
        )
        metrics.append(samples_point(phase.time_metric, "ms", timing.samples_ms))
        metrics += rate_points(
            timing.samples_ms,
            flops=phase.flops,
            flops_metric=phase.flops_metric,
            nbytes=phase.bytes,
            bandwidth_metric=phase.bandwidth_metric,
            items=phase.items,
            items_metric=phase.items_metric,
        )
        counts[f"{phase.time_metric}.flops"], counts[f"{phase.time_metric}.bytes"] = (
            phase.flops,
            phase.bytes,
        )
    memory = read_memory(device, exclude_bytes=L2_FLUSH_BYTES if flush is not None else 0)
    metrics += memory_points(memory.max_allocated, memory.max_reserved, memory.fragmentation_pct)
    digest = tensor_digest(work.outputs())
    trace = None
    if trace_dir is not None:  # after hashing: profiled steps change a training state
        trace = profile_steps(work.phases[-1].step, device=device, out_dir=trace_dir).name
    return {
        "metrics": metrics,
        "hash": digest,
        "counts": counts,
        "notes": work.notes,
        "timer": timing.timer,
        "trace_file": trace,
    }


def run_allreduce(
    req: RunRequest, params: dict[str, Any], device: torch.device, guard: Guard
) -> dict[str, Any]:
    """All-reduce of `size_bytes` across `world_size` ranks (default: all local GPUs).

    The ranks are child processes, so the guard samples around the whole spawn (warm-up
    and rank start-up included).
    """
    world = int(params.get("world_size") or default_world_size(device.type))
    guard.settle_once(None, "all-reduce runs in spawned ranks")
    with guard.window("time_ms"):
        (row,) = measure_allreduce(
            [int(params.get("size_bytes", 1 << 26))],
            warmup=req.warmup,
            iters=req.iters,
            world_size=world,
            device_type=device.type,
        )
    metrics = [
        samples_point("time_ms", "ms", row["samples_ms"]),
        value_point("algbw_gbps", "GB/s", row["algbw_gbps"], "higher_is_better"),
        value_point("busbw_gbps", "GB/s", row["busbw_gbps"], "higher_is_better"),
    ]
    counts = {"time_ms.bytes": float(row["size_bytes"]) * 2 * (world - 1) / world}
    notes = {"world_size": world, "host_mean_ms": row["host_mean_ms"]}
    return {
        "metrics": metrics,
        "hash": row["hash"],
        "counts": counts,
        "notes": notes,
        "timer": row["timer"],
        "trace_file": None,
    }


def run_callable(
    req: RunRequest, params: dict[str, Any], device: torch.device, guard: Guard
) -> dict[str, Any]:
    """Call the user's `module:function(params, seed, device)`; the guard samples the call."""
    fn = load_callable(req.workload)
    guard.settle_once(None, "a callable times itself")
    with guard.window("call"):
        returned = fn(params, req.seed, str(device))
    points, outputs = split_callable_result(returned, req.workload)
    digest = tensor_digest(outputs) if outputs else None
    return {
        "metrics": points,
        "hash": digest,
        "counts": {},
        "notes": {},
        "timer": "callable",
        "trace_file": None,
    }


def _gpus_used(req: RunRequest, device: torch.device) -> list[int] | None:
    """CUDA indices the run uses; None (every visible GPU) for a command, which picks its own."""
    if req.kind == "command":
        return None
    if device.type != "cuda":
        return []
    if req.kind == "builtin" and req.workload == ALLREDUCE:
        return list(range(int(req.params.get("world_size") or torch.cuda.device_count())))
    return [device.index or 0]  # "cuda" without an index is the first GPU here


def _point(
    req: RunRequest,
    params: dict[str, Any],
    device: torch.device,
    out_dir: Path,
    first: bool,
    guard: Guard,
) -> dict[str, Any]:
    seed_everything(req.seed, req.deterministic)
    if req.kind == "command":
        guard.settle_once(None, "a command times itself")
        with guard.window("command"):
            doc = run_command(
                req.command,
                params,
                seed=req.seed,
                timeout_s=req.timeout_s,
                output_file=req.output_file,
                workdir=out_dir,
            )
        return {"document": doc, "hash": None}
    if req.kind == "callable":
        return run_callable(req, params, device, guard)
    if req.workload == ALLREDUCE:
        return run_allreduce(req, params, device, guard)
    return run_builtin(req, params, device, out_dir if req.profile and first else None, guard)


def execute(req: RunRequest, out_dir: Path) -> dict[str, Any]:
    """Run every sweep point; never raises for a workload failure (it becomes `reason`)."""
    result: dict[str, Any] = {"status": "failed", "reason": "error", "error": None, "points": []}
    guard: Guard | None = None
    try:
        device = resolve_device(req.device)
        result["environment"] = fingerprint.environment(spec_hash=req.spec_hash, device=str(device))
        guard = Guard(
            _gpus_used(req, device),
            expect_gpu=device.type == "cuda",
            settle_options=req.settle,
            rules=Rules(req.min_clock_fraction, req.throttle_min_samples, req.throttle_min_share),
        )
        swept = list(req.sweep)
        for i, params in enumerate(expand_sweep(req.params, req.sweep)):
            point = _point(req, params, device, out_dir, i == 0, guard)
            result["points"].append(
                {"params": params, "label": point_label(params, swept), **point}
            )
        hashes = [p["hash"] for p in result["points"] if p.get("hash")]
        result["determinism_hash"] = combine_digests(hashes) if hashes else None
        result.update(status="succeeded", reason=None)
    except torch.cuda.OutOfMemoryError as e:
        result.update(reason="oom", error=f"out of GPU memory: {e}".splitlines()[0])
    except Exception as e:  # the run fails with a message; the process still reports it
        result["error"] = f"{type(e).__name__}: {e}"[:4000]
        result["traceback"] = traceback.format_exc()[-8000:]
    if guard is not None:  # result.json of a failed run still says what the GPU did
        state, result["warnings"] = guard.environment()
        result["environment"].update(state)
    return result


def main(argv: list[str] | None = None) -> int:
    """Read the request, run it, write `result.json`; exit 0 whenever a result was written."""
    args = sys.argv[1:] if argv is None else argv
    request_path, out_dir = Path(args[0]), Path(args[1])
    out_dir.mkdir(parents=True, exist_ok=True)
    result = execute(RunRequest.read(request_path), out_dir)
    traces = [p.get("trace_file") for p in result["points"] if p.get("trace_file")]
    result["trace_file"] = traces[0] if traces else None
    (out_dir / "result.json").write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
