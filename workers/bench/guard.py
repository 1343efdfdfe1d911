"""The runner's GPU guard: which GPUs to watch, the timed windows, settle, and the flags.

One `Guard` per run. The runner opens `guard.window(label)` around each timed loop (the
harness's CUDA-event loop for built-ins; the whole call for all-reduce ranks, callables
and commands, which time themselves), calls `settle_once` before the first timed loop,
and merges `guard.environment()` into the run's environment at the end. Torch-free.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from workers.bench.gpu_flags import Rules, evaluate
from workers.bench.gpu_monitor import GpuMonitor, load_nvml
from workers.bench.settle import settle

NO_NVML = (
    "NVML unavailable (install nvidia-ml-py, the `bench` extra): GPU clocks, power and "
    "throttling were not sampled, so the run has no flags"
)


def nvml_indices(nvml: Any, cuda_indices: list[int] | None) -> list[int]:
    """NVML indices of CUDA devices (`None`: every visible GPU), via CUDA_VISIBLE_DEVICES.

    CUDA renumbers the visible GPUs from 0; NVML always sees them all. An entry of
    CUDA_VISIBLE_DEVICES is an index or a `GPU-<uuid>`.
    """
    visible = [p.strip() for p in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")]
    visible = [p for p in visible if p]
    if not visible:
        count = nvml.nvmlDeviceGetCount()
        wanted = range(count) if cuda_indices is None else cuda_indices
        return [i for i in wanted if i < count]

    def physical(entry: str) -> int:
        if entry.isdigit():
            return int(entry)
        return int(nvml.nvmlDeviceGetIndex(nvml.nvmlDeviceGetHandleByUUID(entry)))

    chosen = range(len(visible)) if cuda_indices is None else cuda_indices
    return [physical(visible[i]) for i in chosen if i < len(visible)]


class Guard:
    """Samples the run's GPUs through its timed loops and judges what it saw."""

    def __init__(
        self,
        cuda_indices: list[int] | None,
        *,
        expect_gpu: bool,
        settle_options: dict[str, Any] | None = None,
        rules: Rules | None = None,
        nvml: Any = None,
    ) -> None:
        """`cuda_indices`: the CUDA devices the run uses; None means every visible GPU
        (commands pick their own), [] none. `expect_gpu`: warn when NVML is missing.
        `rules`: the settings the flags are judged with."""
        self.expect_gpu, self.rules = expect_gpu, rules or Rules()
        self.settle_options = settle_options
        self.settle_report: dict[str, Any] | None = None
        self.monitor: GpuMonitor | None = None
        self._no_gpu = cuda_indices == []
        if not self._no_gpu:
            nvml = nvml or load_nvml()
        if nvml is not None and not self._no_gpu:
            gpus = nvml_indices(nvml, cuda_indices)
            if gpus:
                self.monitor = GpuMonitor(nvml, gpus, evaluate_only_busy=cuda_indices is None)

    def window(self, label: str = "") -> AbstractContextManager[None]:
        """Sample through a timed loop (nothing without NVML)."""
        return self.monitor.window(label) if self.monitor else contextlib.nullcontext()

    def settle_once(self, chunk: Callable[[], None] | None, skipped_why: str = "") -> None:
        """Run `settle` before the first timed loop when the spec asks for it."""
        if self.settle_options is None or self.settle_report is not None:
            return
        if self.monitor is None:
            why = "no GPU in this run" if self._no_gpu else "NVML unavailable"
            self.settle_report = {"converged": False, "why": f"not settled: {why}"}
            return
        self.settle_report = settle(self.monitor, self.settle_options, chunk,
                                    skipped_why=skipped_why)  # fmt: skip

    def environment(self) -> tuple[dict[str, Any], list[str]]:
        """`gpu_state`, `flags` and `settle` for the run's environment, and its warnings."""
        env: dict[str, Any] = {"flags": []}
        warnings = []
        if self.monitor is not None:
            env["gpu_state"] = self.monitor.state()
            env["flags"] = evaluate(env["gpu_state"], self.rules)
        elif self.expect_gpu:
            warnings.append(NO_NVML)
        if self.settle_report is not None:
            env["settle"] = self.settle_report
        return env, warnings
