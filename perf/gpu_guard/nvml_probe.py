"""Record what NVML reports on a GPU through a sustained GEMM and a short burst (issue #22).

    python3 perf/gpu_guard/nvml_probe.py OUT.json [SUSTAIN_S]

Samples every NVML field the GPU guard reads, every 20 ms, in a thread, while the main
thread runs (1) idle for 1 s, (2) a 1 s burst of bf16 8192^3 GEMMs after the idle,
(3) idle 5 s, (4) SUSTAIN_S seconds (default 30) of back-to-back GEMMs. The samples are
the source of the real throttle codes in the guard's NVML test double. It also records
which "are clocks locked" queries this driver answers.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any

import pynvml as N
import torch


def _try(fn: Any, *args: Any) -> Any:
    try:
        value = fn(*args)
    except Exception as e:  # record what the driver refuses
        return f"error: {type(e).__name__}: {e}"
    if hasattr(value, "_fields_"):
        return {f[0]: getattr(value, f[0]) for f in value._fields_}
    if isinstance(value, list):
        return [
            {f[0]: getattr(v, f[0]) for f in v._fields_} if hasattr(v, "_fields_") else v
            for v in value
        ]
    return value


def sample(h: Any, phase: str) -> dict[str, Any]:
    reasons = getattr(N, "nvmlDeviceGetCurrentClocksEventReasons", None) or (
        N.nvmlDeviceGetCurrentClocksThrottleReasons
    )
    util = N.nvmlDeviceGetUtilizationRates(h)
    return {
        "t": time.perf_counter(),
        "phase": phase,
        "sm": N.nvmlDeviceGetClockInfo(h, N.NVML_CLOCK_SM),
        "mem": N.nvmlDeviceGetClockInfo(h, N.NVML_CLOCK_MEM),
        "power_mw": N.nvmlDeviceGetPowerUsage(h),
        "limit_mw": N.nvmlDeviceGetEnforcedPowerLimit(h),
        "temp": N.nvmlDeviceGetTemperature(h, N.NVML_TEMPERATURE_GPU),
        "reasons": reasons(h),
        "util_gpu": util.gpu,
        "util_mem": util.memory,
        "procs": len(N.nvmlDeviceGetComputeRunningProcesses(h)),
    }


def main() -> None:
    out, sustain = sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 30.0
    N.nvmlInit()
    h = N.nvmlDeviceGetHandleByIndex(0)
    static = {
        "driver": N.nvmlSystemGetDriverVersion(),
        "name": N.nvmlDeviceGetName(h),
        "sm_max": N.nvmlDeviceGetMaxClockInfo(h, N.NVML_CLOCK_SM),
        "mem_max": N.nvmlDeviceGetMaxClockInfo(h, N.NVML_CLOCK_MEM),
        "app_clock_sm": _try(N.nvmlDeviceGetApplicationsClock, h, N.NVML_CLOCK_SM),
        "default_app_clock_sm": _try(N.nvmlDeviceGetDefaultApplicationsClock, h, N.NVML_CLOCK_SM),
        "clock_app_target": _try(
            N.nvmlDeviceGetClock, h, N.NVML_CLOCK_SM, N.NVML_CLOCK_ID_APP_CLOCK_TARGET
        ),
        "clock_customer_boost_max": _try(
            N.nvmlDeviceGetClock, h, N.NVML_CLOCK_SM, N.NVML_CLOCK_ID_CUSTOMER_BOOST_MAX
        ),
        "min_max_clock_pstate0": _try(N.nvmlDeviceGetMinMaxClockOfPState, h, N.NVML_CLOCK_SM, 0),
        "power_limit_constraints": _try(N.nvmlDeviceGetPowerManagementLimitConstraints, h),
        "supported_reasons": _try(
            getattr(N, "nvmlDeviceGetSupportedClocksEventReasons", None)
            or N.nvmlDeviceGetSupportedClocksThrottleReasons,
            h,
        ),
        "slowdown_temp": _try(
            N.nvmlDeviceGetTemperatureThreshold, h, N.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN
        ),
        "persistence": _try(N.nvmlDeviceGetPersistenceMode, h),
        "compute_mode": _try(N.nvmlDeviceGetComputeMode, h),
        "reason_constants": {
            k: getattr(N, k)
            for k in dir(N)
            if k.startswith(("nvmlClocksEventReason", "nvmlClocksThrottleReason"))
        },
    }
    samples: list[dict[str, Any]] = []
    state = {"phase": "idle0", "stop": False}

    def loop() -> None:
        nxt = time.perf_counter()
        while not state["stop"]:
            samples.append(sample(h, state["phase"]))
            nxt += 0.02
            time.sleep(max(0.0, nxt - time.perf_counter()))

    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    th = threading.Thread(target=loop, daemon=True)
    th.start()
    time.sleep(1.0)
    rates: dict[str, float] = {}
    for phase, seconds, pause in (("burst", 1.0, 5.0), ("sustained", sustain, 1.0)):
        state["phase"] = phase
        torch.cuda.synchronize()
        t0, n = time.perf_counter(), 0
        while time.perf_counter() - t0 < seconds:
            for _ in range(8):
                a @ b
            n += 8
            torch.cuda.synchronize()
        dt = time.perf_counter() - t0
        rates[phase] = 2 * 8192**3 * n / dt / 1e12
        state["phase"] = f"after_{phase}"
        time.sleep(pause)
    state["stop"] = True
    th.join()
    with open(out, "w") as f:
        json.dump({"static": static, "tflops": rates, "samples": samples}, f, default=str)
    print(json.dumps({"static": static, "tflops": rates, "n": len(samples)}, default=str)[:3000])


if __name__ == "__main__":
    main()
