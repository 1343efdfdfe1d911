"""Flags from the GPU state of a run: `throttled`, `contended`, `unlocked`.

`environment["flags"]` is a list of `{"flag", "gpu", "reason", "detail"}`; SLA evaluation
reads it (`require_stable`), so the shape is a contract (docs/BENCHMARKS.md, "GPU state
and flags"). `gpu` is the NVML index, as nvidia-smi numbers GPUs.

- throttled / <reason>: a slowdown clocks-event reason (`gpu_monitor.SLOWDOWNS`) in any
  sample of the timed loops; the detail gives the share of samples.
- throttled / low_clock: the median SM clock is below `min_clock_fraction` of the clock
  the GPU should hold (the locked clock when clocks are locked, else the max clock).
- contended: a compute process that is neither the runner nor one of its children.
- unlocked (information, not a failure): clocks are not locked, so boost follows power
  and temperature. Locked means any of: application clocks differ from their default
  (`nvidia-smi -ac`), the P0 SM clock range is one value (`nvidia-smi -lgc X,X`), or the
  `applications_clocks_setting` / user-defined-clocks reason was seen. On the H200 as
  shipped: application clock 1980 = default, P0 range 345-1980, so unlocked.
"""

from __future__ import annotations

from typing import Any

from workers.bench.gpu_monitor import SLOWDOWNS

MIN_CLOCK_FRACTION = 0.9


def clock_lock(gpu: dict[str, Any]) -> tuple[int | None, str]:
    """The SM clock the GPU is locked to (None when unlocked), and why we think so."""
    app, default = gpu.get("app_clock_mhz"), gpu.get("default_app_clock_mhz")
    pstate = gpu.get("pstate0_sm_mhz") or [None, None]
    if app is not None and default is not None and app != default:
        return int(app), f"application clocks set to {app} MHz (default {default} MHz)"
    if pstate[0] is not None and pstate[0] == pstate[1]:
        return int(pstate[0]), f"P0 SM clock range locked to {pstate[0]} MHz"
    if "applications_clocks_setting" in (gpu.get("reasons") or {}):
        return None, "user-defined clocks reported by NVML"
    span = f"P0 SM clock range {pstate[0]}-{pstate[1]} MHz" if pstate[0] is not None else ""
    app_text = f"application clock {app} MHz = default" if app is not None else ""
    return None, ", ".join(t for t in (span, app_text) if t) or "no clock-lock readings"


def _throttled(gpu: dict[str, Any], min_fraction: float) -> list[dict[str, Any]]:
    out, index, n = [], gpu["index"], gpu["samples"]
    sm = gpu["summary"].get("sm_mhz") or {}
    median = sm.get("median")
    for reason, share in (gpu.get("reasons") or {}).items():
        if reason in SLOWDOWNS:
            clock = f"; SM clock median {median:.0f} MHz" if median is not None else ""
            detail = f"{reason} in {share:.1%} of {n} samples through the timed loop{clock}"
            out.append({"flag": "throttled", "gpu": index, "reason": reason, "detail": detail})
    locked, _ = clock_lock(gpu)
    target = locked or gpu.get("sm_max_mhz")
    if median is not None and target and median < min_fraction * target:
        what = "the locked clock" if locked else "max"
        detail = (
            f"median SM clock {median:.0f} MHz is {median / target:.0%} of {what} "
            f"{target} MHz (below {min_fraction:.0%}); range {sm['min']}-{sm['max']} MHz"
        )
        out.append({"flag": "throttled", "gpu": index, "reason": "low_clock", "detail": detail})
    return out


def evaluate(state: dict[str, Any] | None, min_clock_fraction: float) -> list[dict[str, Any]]:
    """The flags of a run's `gpu_state` (none without one)."""
    flags: list[dict[str, Any]] = []
    for gpu in (state or {}).get("gpus", []):
        if not gpu.get("evaluated", True) or not gpu.get("samples"):
            continue
        flags += _throttled(gpu, min_clock_fraction)
        if gpu.get("foreign_pids"):
            pids = ", ".join(map(str, gpu["foreign_pids"][:8]))
            count = len(gpu["foreign_pids"])
            detail = f"{count} other process(es) on the GPU during the timed loop (pid {pids})"
            if (state or {}).get("host_pids"):
                detail += "; NVML reports host pids here, so which pid is the runner is a guess"
            flags.append({"flag": "contended", "gpu": gpu["index"], "reason": "other_process",
                          "detail": detail})  # fmt: skip
        locked, why = clock_lock(gpu)
        if locked is None and "user-defined" not in why:
            detail = f"clocks not locked ({why}): boost follows power and temperature"
            flags.append({"flag": "unlocked", "gpu": gpu["index"], "reason": "boost_clocks",
                          "detail": detail})  # fmt: skip
    return flags
