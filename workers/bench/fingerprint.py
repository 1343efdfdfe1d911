"""The environment a run measured in: GPUs, driver, CUDA/ROCm, torch, perfdash, clocks.

NVML (the `pynvml` module of nvidia-ml-py) is optional: when it imports, clocks and
temperatures are read before and after the measured loop, and the run is flagged when
the SM clock was below its maximum or the GPU was hot. Without it those fields are
absent, never guessed.

`python -m workers.bench.fingerprint` prints the capabilities a GPU worker reports at
start-up; the worker runs it as a subprocess so its own process never initialises CUDA.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import platform
import socket
import sys
import tomllib
from pathlib import Path
from typing import Any

HOT_C = 80
CLOCK_FRACTION = 0.9
_DRIVER_FILE = Path("/proc/driver/nvidia/version")


def perfdash_version() -> str:
    """The installed perfdash version, else the checkout's pyproject version."""
    try:
        return importlib.metadata.version("perfdash")
    except importlib.metadata.PackageNotFoundError:
        pass
    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    if pyproject.exists():  # a checkout on PYTHONPATH, as on a bare GPU host
        return str(tomllib.loads(pyproject.read_text())["project"]["version"])
    return "unknown"


def _nvml() -> Any:
    try:
        pynvml = importlib.import_module("pynvml")  # nvidia-ml-py; optional, ships no stubs
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:  # pynvml raises its own NVMLError family; no NVML means no clocks
        return None
    return pynvml


def driver_version() -> str | None:
    """The NVIDIA driver version from NVML, else from /proc, else None."""
    nvml = _nvml()
    if nvml is not None:
        version = nvml.nvmlSystemGetDriverVersion()
        return version.decode() if isinstance(version, bytes) else str(version)
    if _DRIVER_FILE.exists():
        words = _DRIVER_FILE.read_text().split()
        return next((w for w in words if w[:1].isdigit() and "." in w), None)
    return None


def read_clocks() -> list[dict[str, Any]] | None:
    """Per-GPU SM/memory clocks (MHz), their maxima and the temperature (°C), via NVML."""
    nvml = _nvml()
    if nvml is None:
        return None
    rows = []
    for index in range(nvml.nvmlDeviceGetCount()):
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
        rows.append(
            {
                "index": index,
                "sm_mhz": nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM),
                "sm_max_mhz": nvml.nvmlDeviceGetMaxClockInfo(handle, nvml.NVML_CLOCK_SM),
                "mem_mhz": nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_MEM),
                "mem_max_mhz": nvml.nvmlDeviceGetMaxClockInfo(handle, nvml.NVML_CLOCK_MEM),
                "temperature_c": nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU),
            }
        )
    return rows


def clock_warnings(after: list[dict[str, Any]] | None, used: list[int]) -> list[str]:
    """Why the numbers may be low: clocks below max at the end of the loop, or a hot GPU.

    Only the GPUs the run used count; an idle neighbour sits at its idle clock.

    >>> row = {"index": 0, "sm_mhz": 1000, "sm_max_mhz": 1980, "temperature_c": 85}
    >>> clock_warnings([row], [0])
    ['gpu0: SM clock 1000 MHz < 90% of max 1980 MHz', 'gpu0: 85 °C >= 80 °C']
    >>> clock_warnings([row], [1]), clock_warnings(None, [0])
    ([], [])
    """
    warnings = []
    for row in (r for r in after or [] if r["index"] in used):
        if row["sm_mhz"] < CLOCK_FRACTION * row["sm_max_mhz"]:
            warnings.append(
                f"gpu{row['index']}: SM clock {row['sm_mhz']} MHz < 90% of max "
                f"{row['sm_max_mhz']} MHz"
            )
        if row["temperature_c"] >= HOT_C:
            warnings.append(f"gpu{row['index']}: {row['temperature_c']} °C >= {HOT_C} °C")
    return warnings


def capabilities() -> dict[str, Any]:
    """GPUs, driver and library versions of this host; torch is optional here."""
    caps: dict[str, Any] = {
        "hostname": socket.gethostname(),
        "python": platform.python_version(),
        "perfdash": perfdash_version(),
        "driver": driver_version(),
        "torch": None,
        "cuda": None,
        "rocm": None,
        "gpus": [],
    }
    try:
        import torch
    except ImportError:
        return caps
    caps.update(torch=torch.__version__, cuda=torch.version.cuda, rocm=torch.version.hip)
    if torch.cuda.is_available():
        caps["gpus"] = [
            {
                "index": i,
                "name": torch.cuda.get_device_name(i),
                "memory_bytes": torch.cuda.get_device_properties(i).total_memory,
                "capability": ".".join(map(str, torch.cuda.get_device_capability(i))),
            }
            for i in range(torch.cuda.device_count())
        ]
    return caps


def environment(*, spec_hash: str, device: str) -> dict[str, Any]:
    """The fingerprint stored with a run (clocks are added by the runner)."""
    caps = capabilities()
    gpus = caps.pop("gpus")
    runner = caps.pop("hostname")
    return {
        **caps,
        "runner": runner,
        "device": device,
        "gpu_model": gpus[0]["name"] if gpus and device.startswith("cuda") else None,
        "gpu_count": len(gpus),
        "spec_hash": spec_hash,
    }


if __name__ == "__main__":
    json.dump(capabilities(), sys.stdout)
