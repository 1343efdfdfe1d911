"""The `settle` spec option: bring the GPU to a known state before anything is timed.

Two bounded stages, reported in `environment["settle"]`:

1. idle: wait until every GPU of the run has no foreign compute process, utilisation at
   most `max_util_pct` and temperature at most `max_temp_c` (a hot GPU hits its thermal
   and power limits sooner), for at most `idle_timeout_s`.
2. steady: run the workload's first step in chunks until the SM clock and the power have
   stopped moving: the means over the last two `window_s` windows differ by at most
   `clock_tolerance` of the max clock and `power_tolerance` of the power limit, for at most
   `steady_timeout_s`. Windows of means, not a max-min band, because under the power cap
   the H200's SM clock swings 1305-1545 MHz sample to sample while its 1 s mean stays within
   1 % (perf/gpu_guard/results/nvml_probe_h200.json.gz). Skipped for stateful workloads
   (extra training steps would change the determinism hash) and for commands.

A stage that times out does not fail the run; the report says it did not converge.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from typing import Any

from workers.bench.gpu_monitor import GpuMonitor


@dataclass(frozen=True)
class SettleOptions:
    """Thresholds and bounds of `settle`; `spec.settle` overrides any of them."""

    max_temp_c: float = 50.0
    max_util_pct: float = 5.0
    idle_timeout_s: float = 60.0
    steady_timeout_s: float = 30.0
    window_s: float = 1.0
    clock_tolerance: float = 0.02
    power_tolerance: float = 0.03

    @classmethod
    def of(cls, raw: dict[str, Any]) -> SettleOptions:
        """Options from the spec's `settle` mapping (validated by the backend)."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: float(v) for k, v in raw.items() if k in known})


@dataclass
class _Clock:
    now: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep


def wait_idle(
    monitor: GpuMonitor, opts: SettleOptions, clock: _Clock, poll_s: float = 0.2
) -> dict[str, Any]:
    """Stage 1: poll until idle and cool, or `idle_timeout_s` passes."""
    start = clock.now()
    while True:
        readings = monitor.read_all()
        busy = [why for why in (_why_busy(r, opts) for r in readings) if why]
        waited = round(clock.now() - start, 3)
        if not busy:
            return {"converged": True, "waited_s": waited, "readings": _brief(readings)}
        if waited >= opts.idle_timeout_s:
            return {"converged": False, "waited_s": waited, "why": "; ".join(map(str, busy)),
                    "readings": _brief(readings)}  # fmt: skip
        clock.sleep(poll_s)


def _why_busy(reading: dict[str, Any], opts: SettleOptions) -> str | None:
    gpu = f"gpu{reading['gpu']}"
    if reading["foreign_pids"]:
        return f"{gpu}: other processes {reading['foreign_pids'][:4]}"
    if (reading["util_pct"] or 0) > opts.max_util_pct:
        return f"{gpu}: utilisation {reading['util_pct']}% > {opts.max_util_pct:g}%"
    if (reading["temp_c"] or 0) > opts.max_temp_c:
        return f"{gpu}: {reading['temp_c']} °C > {opts.max_temp_c:g} °C"
    return None


def _brief(readings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    keys = ("gpu", "sm_mhz", "power_w", "temp_c", "util_pct")
    return [{k: r[k] for k in keys} for r in readings]


def warm_until_steady(
    monitor: GpuMonitor,
    opts: SettleOptions,
    chunk: Callable[[], None],
    clock: _Clock,
    poll_s: float = 0.1,
) -> dict[str, Any]:
    """Stage 2: run `chunk` (a few synchronised steps) until clock and power are steady."""
    limits = monitor.limits()
    start, last_read, chunks = clock.now(), float("-inf"), 0
    history: list[tuple[float, list[dict[str, Any]]]] = []
    while True:
        chunk()
        chunks += 1
        now = clock.now()
        if now - last_read >= poll_s:
            history.append((now - start, monitor.read_all()))
            last_read = now
        elapsed = now - start
        if elapsed >= 2 * opts.window_s and _steady(history, elapsed, opts, limits):
            return {"converged": True, "took_s": round(elapsed, 3), "chunks": chunks,
                    "readings": _brief(history[-1][1])}  # fmt: skip
        if elapsed >= opts.steady_timeout_s:
            return {"converged": False, "took_s": round(elapsed, 3), "chunks": chunks,
                    "readings": _brief(history[-1][1]) if history else []}  # fmt: skip


def _steady(
    history: list[tuple[float, list[dict[str, Any]]]],
    now: float,
    opts: SettleOptions,
    limits: list[tuple[float | None, float | None]],
) -> bool:
    w = opts.window_s
    last = [r for t, r in history if now - w < t <= now]
    prev = [r for t, r in history if now - 2 * w < t <= now - w]
    if not last or not prev:
        return False
    for g, (sm_max, power_limit) in enumerate(limits):
        for name, scale, tol in (
            ("sm_mhz", sm_max, opts.clock_tolerance),
            ("power_w", power_limit, opts.power_tolerance),
        ):
            a = [r[g][name] for r in last if r[g][name] is not None]
            b = [r[g][name] for r in prev if r[g][name] is not None]
            if not a or not b or not scale:
                continue  # a field this GPU does not report cannot hold the run back
            if abs(statistics.fmean(a) - statistics.fmean(b)) > tol * scale:
                return False
    return True


def settle(
    monitor: GpuMonitor,
    raw: dict[str, Any],
    chunk: Callable[[], None] | None,
    *,
    skipped_why: str = "",
    clock: _Clock | None = None,
) -> dict[str, Any]:
    """Both stages; `chunk` None skips the steady stage (`skipped_why` says why)."""
    opts, clock = SettleOptions.of(raw), clock or _Clock()
    idle = wait_idle(monitor, opts, clock)
    steady: dict[str, Any] = {"skipped": skipped_why or "no step to warm up with"}
    if chunk is not None:
        steady = warm_until_steady(monitor, opts, chunk, clock)
    converged = idle["converged"] and steady.get("converged", True)
    return {"converged": converged, "options": asdict(opts), "idle": idle, "steady": steady}
