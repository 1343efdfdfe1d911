"""Flags from the GPU state of a run: `throttled`, `unjudged`, `contended`, `unlocked`.

`environment["flags"]` is a list of `{"flag", "gpu", "reason", "detail"}`; SLA evaluation
reads it (`require_stable`), so the shape is a contract (docs/BENCHMARKS.md, "GPU state
and flags"). `gpu` is the NVML index, as nvidia-smi numbers GPUs.

- throttled / <reason>: a slowdown clocks-event reason (`gpu_monitor.SLOWDOWNS`) borne out
  by its evidence (`gpu_monitor.backed_mask`: power near the enforced limit for
  `sw_power_cap`, temperature near the slowdown point for the thermal ones) in at least
  `min_share` of the samples of the timed loops; the detail gives the shares.
- unjudged / few_samples (information): fewer than `min_samples` samples, too few to
  judge by (a 12-35 ms burst gets 2-4), so neither reasons nor the clock flag the run; the
  detail gives the count and what the readings said. On the H200 bursts after idle
  reported 0x4 at 100-160 W of 700 W, and SM clocks of 1485-1845 MHz that NVML had not
  refreshed within the loop (three equal readings), at 680-782 TFLOP/s.
- throttled / low_clock: the median SM clock (over at least `min_samples` samples) is
  below `min_clock_fraction` of the clock the GPU should hold (the locked clock when
  clocks are locked, else the max clock).
- contended / other_process: a process that is neither the runner nor one of its
  children used the GPU (SM or memory utilisation in NVML's per-process samples) during a
  timed loop, or was there on a GPU whose NVML gives no per-process utilisation.
- other_process_present / idle_holder (information): such a process held a context (and
  memory) but used nothing.
- unlocked (information, not a failure): clocks are not locked, so boost follows power
  and temperature. Locked means any of: application clocks differ from their default
  (`nvidia-smi -ac`), the P0 SM clock range is one value (`nvidia-smi -lgc X,X`), or the
  `applications_clocks_setting` / user-defined-clocks reason was seen. On the H200 as
  shipped: application clock 1980 = default, P0 range 345-1980, so unlocked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from workers.bench.gpu_monitor import SLOWDOWNS

MIN_CLOCK_FRACTION = 0.9
MIN_SAMPLES = 5  # PERFDASH_BENCH_THROTTLE_MIN_SAMPLES: ~ one NVML refresh at 20 ms
MIN_SHARE = 0.1  # PERFDASH_BENCH_THROTTLE_MIN_SHARE


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


@dataclass(frozen=True)
class Rules:
    """The settings flags are judged with (the worker passes them in the `RunRequest`)."""

    min_clock_fraction: float = MIN_CLOCK_FRACTION
    min_samples: int = MIN_SAMPLES
    min_share: float = MIN_SHARE


def _median(gpu: dict[str, Any], name: str) -> float | None:
    return (gpu["summary"].get(name) or {}).get("median")


def _reasons(gpu: dict[str, Any], rules: Rules) -> list[dict[str, Any]]:
    """`throttled` per reason borne out often enough, or `unjudged` on too few samples."""
    index, n = gpu["index"], gpu["samples"]
    seen = {r: v for r, v in (gpu.get("reasons") or {}).items() if r in SLOWDOWNS}
    backed = gpu.get("reasons_backed") or {}
    power, limit = _median(gpu, "power_w"), _median(gpu, "power_limit_w")
    watts = f"; power median {power:.0f} W of {limit:.0f} W" if power and limit else ""
    sm = _median(gpu, "sm_mhz")
    clock = f"; SM clock median {sm:.0f} MHz" if sm is not None else ""
    if n < rules.min_samples:
        said = ", ".join(f"{r} in {v:.0%}" for r, v in seen.items()) or "no slowdown reason"
        detail = (f"{n} samples through the timed loop, fewer than {rules.min_samples}: too "
                  f"short to judge throttling ({said}{watts}{clock})")  # fmt: skip
        return [{"flag": "unjudged", "gpu": index, "reason": "few_samples", "detail": detail}]
    out = []
    for reason, share in seen.items():
        real = backed.get(reason, 0.0)
        if real >= rules.min_share:
            detail = (f"{reason} in {share:.1%} of {n} samples, borne out by power or "
                      f"temperature in {real:.1%} (at least {rules.min_share:.0%})"
                      f"{watts}{clock}")  # fmt: skip
            out.append({"flag": "throttled", "gpu": index, "reason": reason, "detail": detail})
    return out


def _low_clock(gpu: dict[str, Any], min_fraction: float) -> list[dict[str, Any]]:
    sm = gpu["summary"].get("sm_mhz") or {}
    median = sm.get("median")
    locked, _ = clock_lock(gpu)
    target = locked or gpu.get("sm_max_mhz")
    if median is None or not target or median >= min_fraction * target:
        return []
    what = "the locked clock" if locked else "max"
    detail = (
        f"median SM clock {median:.0f} MHz is {median / target:.0%} of {what} "
        f"{target} MHz (below {min_fraction:.0%}); range {sm['min']}-{sm['max']} MHz"
    )
    return [{"flag": "throttled", "gpu": gpu["index"], "reason": "low_clock", "detail": detail}]


def _others(gpu: dict[str, Any], host_pids: bool) -> list[dict[str, Any]]:
    """`contended` for processes that used the GPU, `other_process_present` for holders."""
    foreign = gpu.get("foreign_pids") or []
    if not foreign:
        return []
    use = {int(p): pct for p, pct in (gpu.get("foreign_use") or {}).items()}
    guess = (
        "; NVML reports host pids here, so which pid is the runner is a guess" if host_pids else ""
    )
    if gpu.get("process_util") is False:  # NVML cannot tell use from presence: assume use
        pids = ", ".join(map(str, foreign[:8]))
        detail = (f"{len(foreign)} other process(es) on the GPU during the timed loop (pid "
                  f"{pids}); NVML gives no per-process utilisation here, so presence "
                  f"counts as use{guess}")  # fmt: skip
        return [
            {"flag": "contended", "gpu": gpu["index"], "reason": "other_process", "detail": detail}
        ]
    busy = [p for p in foreign if use.get(p, 0) > 0]
    idle = [p for p in foreign if use.get(p, 0) <= 0]
    out = []
    if busy:
        pids = ", ".join(f"{p} ({use[p]}%)" for p in busy[:8])
        detail = (f"{len(busy)} other process(es) used the GPU during the timed loop (pid, "
                  f"most SM or memory utilisation: {pids}){guess}")  # fmt: skip
        out.append(
            {"flag": "contended", "gpu": gpu["index"], "reason": "other_process", "detail": detail}
        )
    if idle:
        pids = ", ".join(map(str, idle[:8]))
        detail = (f"{len(idle)} other process(es) held a context on the GPU but used none of "
                  f"it during the timed loop (pid {pids}){guess}")  # fmt: skip
        out.append({"flag": "other_process_present", "gpu": gpu["index"], "reason": "idle_holder",
                    "detail": detail})  # fmt: skip
    return out


def evaluate(
    state: dict[str, Any] | None, rules: Rules | float = MIN_CLOCK_FRACTION
) -> list[dict[str, Any]]:
    """The flags of a run's `gpu_state` (none without one); a bare float is the
    `min_clock_fraction` with the default sample rules."""
    rules = rules if isinstance(rules, Rules) else Rules(min_clock_fraction=rules)
    flags: list[dict[str, Any]] = []
    for gpu in (state or {}).get("gpus", []):
        if not gpu.get("evaluated", True) or not gpu.get("samples"):
            continue
        flags += _reasons(gpu, rules)
        if gpu["samples"] >= rules.min_samples:  # the median of 2-4 stale readings: no
            flags += _low_clock(gpu, rules.min_clock_fraction)
        flags += _others(gpu, bool((state or {}).get("host_pids")))
        locked, why = clock_lock(gpu)
        if locked is None and "user-defined" not in why:
            detail = f"clocks not locked ({why}): boost follows power and temperature"
            flags.append({"flag": "unlocked", "gpu": gpu["index"], "reason": "boost_clocks",
                          "detail": detail})  # fmt: skip
    return flags
