"""The environment a run measured in: GPUs, driver, CUDA/ROCm, torch, perfdash.

What the GPU did during the run (clocks, power, throttling, other processes) is sampled
through the timed loops by `workers.bench.gpu_monitor`, not read here.

`python -m workers.bench.fingerprint` prints the capabilities a GPU worker reports at
start-up; the worker runs it as a subprocess so its own process never initialises CUDA.
"""

from __future__ import annotations

import importlib.metadata
import json
import platform
import socket
import sys
import tomllib
from pathlib import Path
from typing import Any

from workers.bench.gpu_monitor import load_nvml

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


def driver_version() -> str | None:
    """The NVIDIA driver version from NVML, else from /proc, else None."""
    nvml = load_nvml()
    if nvml is not None:
        version = nvml.nvmlSystemGetDriverVersion()
        return version.decode() if isinstance(version, bytes) else str(version)
    if _DRIVER_FILE.exists():
        words = _DRIVER_FILE.read_text().split()
        return next((w for w in words if w[:1].isdigit() and "." in w), None)
    return None


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
    """The fingerprint stored with a run (the GPU guard adds `gpu_state` and `flags`)."""
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
