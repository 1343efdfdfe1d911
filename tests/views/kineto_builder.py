"""Tiny Kineto (torch.profiler) JSON documents built in tests, with numbers the test knows."""

from __future__ import annotations

import json
from typing import Any


def kernel(name: str, ts_us: float, dur_us: float, ext: int = 0, stream: int = 7) -> dict[str, Any]:
    """A `cat: kernel` event on GPU 0."""
    return {
        "ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream, "ts": ts_us,
        "dur": dur_us, "args": {"device": 0, "stream": stream, "correlation": ext,
                                "External id": ext},
    }  # fmt: skip


def cpu_op(name: str, ts_us: float, dur_us: float, ext: int, **args: Any) -> dict[str, Any]:
    """A `cat: cpu_op` event with its External id and any recorded shapes."""
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts_us,
            "dur": dur_us, "args": {"External id": ext, **args}}  # fmt: skip


def launch(ts_us: float, dur_us: float, correlation: int) -> dict[str, Any]:
    """A `cudaLaunchKernel` runtime call; inside a CPU op's span it ties that op to the kernel
    with the same `correlation`."""
    return {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
            "ts": ts_us, "dur": dur_us, "args": {"correlation": correlation}}  # fmt: skip


def step(n: int, ts_us: float, dur_us: float) -> dict[str, Any]:
    """A `ProfilerStep#n` annotation."""
    return {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{n}", "pid": 1,
            "tid": 1, "ts": ts_us, "dur": dur_us, "args": {}}  # fmt: skip


def memory(ts_us: float, allocated: int, reserved: int, nbytes: int) -> dict[str, Any]:
    """A `[memory]` instant on GPU 0 with the allocator's totals after it."""
    return {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1,
            "ts": ts_us, "s": "t", "args": {"Device Type": 1, "Device Id": 0, "Bytes": nbytes,
                                            "Total Allocated": allocated,
                                            "Total Reserved": reserved}}  # fmt: skip


def document(events: list[dict[str, Any]], gpu: str = "NVIDIA H200") -> bytes:
    """The whole file, as torch.profiler would write it."""
    # traceEvents first: the streaming Kineto reader currently rejects this small document
    # when deviceProperties precedes it (reported to the ingest owner).
    doc = {
        "traceEvents": events,
        "schemaVersion": 1,
        "deviceProperties": [{"id": 0, "name": gpu, "numSms": 132, "computeMajor": 9}],
        "record_shapes": 1,
    }
    return json.dumps(doc).encode()
