"""A test double of NVML: the `pynvml` functions and constants the GPU guard calls.

Only NVML is faked; the monitor, flags, settle, runner, worker and push are the real
code. Importable as `pynvml` by putting this folder first on PYTHONPATH (the runner
subprocess of a real worker), or loaded as a module object by unit tests.

The scenario is `configure(dict)` or, at import, the JSON file named by
`NVIDIA_FAKE_NVML` (an `NVIDIA_` name, so the runner's clean environment passes it
as it passes the driver's own variables, issue #40):
`{"gpus": [{"static": {...}, "samples": [{...}]}]}` with the probe's field names (`sm`,
`mem`, `power_mw`, `limit_mw`, `temp`, `reasons`, `util_gpu`,
`pids`, and `use`: per-process utilisation, `{pid: percent}`, served by
`nvmlDeviceGetProcessUtilization`; static `process_util: false` makes that call
unsupported). Each `nvmlDeviceGetClockInfo(h, NVML_CLOCK_SM)` call moves that GPU to its next
sample (the monitor reads the SM clock first); past the end the last sample repeats.
`pids` entries are integers, or "self" for the calling process. The reason constants are
the ones the H200 probe recorded from the real nvidia-ml-py (perf/gpu_guard/results).
"""

from __future__ import annotations

import gzip
import json
import os
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

PROBE = Path(__file__).resolve().parents[3] / "perf/gpu_guard/results/nvml_probe_h200.json.gz"
_STATIC = json.loads(gzip.decompress(PROBE.read_bytes()))["static"]
globals().update(_STATIC["reason_constants"])  # nvmlClocksEventReason*, nvmlClocksThrottleReason*

NVML_CLOCK_GRAPHICS, NVML_CLOCK_SM, NVML_CLOCK_MEM = 0, 1, 2
NVML_TEMPERATURE_GPU = 0
NVML_TEMPERATURE_THRESHOLD_SHUTDOWN, NVML_TEMPERATURE_THRESHOLD_SLOWDOWN = 0, 1


NVML_ERROR_NOT_SUPPORTED, NVML_ERROR_NOT_FOUND = 3, 6


class NVMLError(Exception):
    """What pynvml raises (its `value` is the NVML return code); the monitor must treat it
    as 'field absent'."""

    def __init__(self, value: Any = None) -> None:
        super().__init__(value)
        self.value = value


_state: dict[str, Any] = {"gpus": [], "cursor": []}
calls: list[str] = []


def configure(scenario: dict[str, Any]) -> None:
    """Replace the scenario and rewind every GPU to its first sample."""
    _state["gpus"] = scenario["gpus"]
    _state["cursor"] = [-1] * len(scenario["gpus"])
    calls.clear()


if os.environ.get("NVIDIA_FAKE_NVML"):
    configure(json.loads(Path(os.environ["NVIDIA_FAKE_NVML"]).read_text()))


def _gpu(handle: int) -> dict[str, Any]:
    return dict(_state["gpus"][handle])


def _sample(handle: int) -> dict[str, Any]:
    samples = _state["gpus"][handle]["samples"]
    return dict(samples[min(max(_state["cursor"][handle], 0), len(samples) - 1)])


def _static(handle: int, key: str) -> Any:
    value = {**_STATIC, **_gpu(handle).get("static", {})}.get(key)
    if value is None or (isinstance(value, str) and value.startswith("error")):
        raise NVMLError(f"{key}: not supported")
    return value


def nvmlInit() -> None:
    calls.append("nvmlInit")


def nvmlShutdown() -> None:
    calls.append("nvmlShutdown")


def nvmlSystemGetDriverVersion() -> str:
    return str(_STATIC["driver"])


def nvmlDeviceGetCount() -> int:
    return len(_state["gpus"])


def nvmlDeviceGetHandleByIndex(index: int) -> int:
    if not 0 <= index < len(_state["gpus"]):
        raise NVMLError(f"no GPU {index}")
    return index


def nvmlDeviceGetIndex(handle: int) -> int:
    return handle


def nvmlDeviceGetHandleByUUID(uuid: str) -> int:
    for i, gpu in enumerate(_state["gpus"]):
        if gpu.get("uuid") == uuid:
            return i
    raise NVMLError(f"no GPU {uuid}")


def nvmlDeviceGetName(handle: int) -> str:
    return str(_static(handle, "name"))


def nvmlDeviceGetMaxClockInfo(handle: int, clock: int) -> int:
    return int(_static(handle, "sm_max" if clock == NVML_CLOCK_SM else "mem_max"))


def nvmlDeviceGetApplicationsClock(handle: int, clock: int) -> int:
    return int(_static(handle, "app_clock_sm"))


def nvmlDeviceGetDefaultApplicationsClock(handle: int, clock: int) -> int:
    return int(_static(handle, "default_app_clock_sm"))


def nvmlDeviceGetMinMaxClockOfPState(handle: int, clock: int, pstate: int) -> tuple[int, int]:
    low, high = _static(handle, "min_max_clock_pstate0")
    return int(low), int(high)


def nvmlDeviceGetTemperatureThreshold(handle: int, threshold: int) -> int:
    return int(_static(handle, "slowdown_temp"))


def nvmlDeviceGetClockInfo(handle: int, clock: int) -> int:
    if clock == NVML_CLOCK_SM:
        _state["cursor"][handle] += 1
        return int(_sample(handle)["sm"])
    return int(_sample(handle)["mem"])


def nvmlDeviceGetPowerUsage(handle: int) -> int:
    value = _sample(handle).get("power_mw")
    if value is None:
        raise NVMLError("power: not supported")
    return int(value)


def nvmlDeviceGetEnforcedPowerLimit(handle: int) -> int:
    return int(_sample(handle)["limit_mw"])


def nvmlDeviceGetTemperature(handle: int, sensor: int) -> int:
    return int(_sample(handle)["temp"])


def nvmlDeviceGetCurrentClocksEventReasons(handle: int) -> int:
    return int(_sample(handle)["reasons"])


nvmlDeviceGetCurrentClocksThrottleReasons = nvmlDeviceGetCurrentClocksEventReasons


def nvmlDeviceGetUtilizationRates(handle: int) -> SimpleNamespace:
    sample = _sample(handle)
    return SimpleNamespace(gpu=int(sample["util_gpu"]), memory=int(sample["util_mem"]))


def nvmlDeviceGetComputeRunningProcesses(handle: int) -> list[SimpleNamespace]:
    pids = _sample(handle).get("pids", ["self"])
    return [
        SimpleNamespace(pid=os.getpid() if p == "self" else int(p), usedGpuMemory=1 << 30)
        for p in pids
    ]


def nvmlDeviceGetProcessUtilization(handle: int, since_us: int) -> list[SimpleNamespace]:
    """Like NVML: NOT_FOUND when no process ran since `since_us` (a holder that runs no
    kernels never appears), NOT_SUPPORTED where the GPU cannot say."""
    if _gpu(handle).get("static", {}).get("process_util") is False:
        raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
    use = _sample(handle).get("use") or {}
    if not use:
        raise NVMLError(NVML_ERROR_NOT_FOUND)
    now = max(int(time.time() * 1_000_000), since_us + 1)
    return [
        SimpleNamespace(pid=os.getpid() if p == "self" else int(p), timeStamp=now,
                        smUtil=int(v), memUtil=0, encUtil=0, decUtil=0)
        for p, v in use.items()
    ]  # fmt: skip
