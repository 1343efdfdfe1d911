"""Conventions every rocprof reader shares, so all AMD formats land in the model the same way.

- Times stay integer ns on the profiler's clock (CLOCK_BOOTTIME for rocprofv3, a boot-based
  clock for v1); the clock is recorded in `TraceHeader.metadata`, never shifted to the epoch.
- AMD grid sizes count work-items, CUDA's count blocks: kernels carry `grid_workitems`,
  `workgroup` (also as `block`, Kineto's key) and `grid` in workgroups, all `[x, y, z]`.
- The HSA queue is the stream (`stream` = queue id) and `args["queue"]` keeps the id so pages
  can say "queue N"; a HIP stream id, when the format has one, is `args["hip_stream"]`.
- RCCL/NCCL work carries `args["communication"] = True`; RCCL API collectives also carry
  `args["Collective name"]` (Kineto's key); kernels follow `ingest.classify.is_communication`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

from ingest.events import Device, EventKind, ParseReport

BOOTTIME = {
    "clock_domain": "CLOCK_BOOTTIME",
    "clock_note": "timestamps are ns since the machine booted, not since the Unix epoch",
}
_COMM_PREFIXES = ("nccl", "rccl", "msccl")
_COLLECTIVE = re.compile(
    r"^(?:nccl|rccl)(AllReduce|Broadcast|Reduce|AllGather|ReduceScatter|AllToAllv?|AlltoAll"
    r"|Send|Recv|Gather|Scatter)$",
    re.IGNORECASE,
)
_COPY_DIRECTIONS = {
    "HOST_TO_DEVICE": "HtoD",
    "DEVICE_TO_HOST": "DtoH",
    "DEVICE_TO_DEVICE": "DtoD",
    "HOST_TO_HOST": "HtoH",
}
MEMCPY_NO_BYTES = (
    "rocprofv3's memory-copy CSV has no byte count: copies are stored without bytes "
    "(the rocpd and JSON outputs record sizes)"
)


def warn(report: ParseReport, message: str) -> None:
    """Add a warning that is not a skipped record (once per distinct message)."""
    if message not in report.warnings and len(report.warnings) < report.max_warnings:
        report.warnings.append(message)


def us_to_ns(value: object) -> int:
    """µs (number or numeric string, as rocprof v1 JSON writes them) to integer ns.

    >>> us_to_ns("769537350099"), us_to_ns(1.5), us_to_ns("2.0015")
    (769537350099000, 1500, 2002)
    """
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise TypeError(f"time has type {type(value).__name__}")
    try:
        number = Decimal(str(value).strip())
    except InvalidOperation:
        raise ValueError(f"time {value!r} is not a number") from None
    if not number.is_finite():
        raise ValueError("time is not finite")
    return int((number * 1000).to_integral_value())


def agent_index(value: str | int | None) -> int | None:
    """The number in a rocprofv3 agent id: ``"Agent 4"`` and ``4`` are both agent 4.

    >>> agent_index("Agent 4"), agent_index("2"), agent_index(""), agent_index(7)
    (4, 2, None, 7)
    """
    if value is None or isinstance(value, int):
        return value
    token = value.strip().rsplit(" ", 1)[-1]
    return int(token) if token.isdigit() else None


def kernel_args(
    grid_workitems: tuple[int, int, int], workgroup: tuple[int, int, int], **extra: Any
) -> dict[str, Any]:
    """Launch args with both grid conventions labelled, plus `extra` entries that are not None.

    >>> kernel_args((1024, 1024, 1), (64, 1, 1))["grid"]
    [16, 1024, 1]
    """
    grid = [-(-g // w) if w > 0 else g for g, w in zip(grid_workitems, workgroup, strict=True)]
    args: dict[str, Any] = {
        "grid_workitems": list(grid_workitems),
        "workgroup": list(workgroup),
        "block": list(workgroup),
        "grid": grid,
    }
    args.update((k, v) for k, v in extra.items() if v is not None)
    return args


def kernel_args_columns(
    grid_workitems: Sequence[Sequence[int]],
    workgroup: Sequence[Sequence[int]],
    extra: Mapping[str, Sequence[Any]],
) -> list[dict[str, Any]]:
    """`kernel_args` for many rows at once: x/y/z columns and one column per extra entry
    (same keys, same order, None entries left out).

    >>> rows = kernel_args_columns(([1024], [1024], [1]), ([64], [1], [1]), {"queue": [None]})
    >>> rows == [kernel_args((1024, 1024, 1), (64, 1, 1), queue=None)]
    True
    """
    present = {k: v for k, v in extra.items() if any(x is not None for x in v)}
    keys = list(present)
    sparse = any(None in v for v in present.values())
    out: list[dict[str, Any]] = []
    for gx, gy, gz, wx, wy, wz, *values in zip(
        *grid_workitems, *workgroup, *present.values(), strict=True
    ):
        args: dict[str, Any] = {
            "grid_workitems": [gx, gy, gz],
            "workgroup": [wx, wy, wz],
            "block": [wx, wy, wz],
            "grid": [
                -(-gx // wx) if wx > 0 else gx,
                -(-gy // wy) if wy > 0 else gy,
                -(-gz // wz) if wz > 0 else gz,
            ],
        }
        if sparse:
            args.update((k, v) for k, v in zip(keys, values, strict=True) if v is not None)
        else:
            args.update(zip(keys, values, strict=True))
        out.append(args)
    return out


def mark_communication(name: str, args: dict[str, Any], *, api: bool = False) -> None:
    """Mark RCCL/NCCL work as communication (``args["communication"] = True``).

    Kernels follow `ingest.classify.is_communication` (name starts with nccl/rccl/msccl); the
    summaries read the collective from such kernel names. RCCL API calls that move data also
    get ``"Collective name"``; communicator setup and queries are not marked.

    >>> a: dict[str, Any] = {}; mark_communication("ncclAllReduce", a, api=True); a
    {'communication': True, 'Collective name': 'allreduce'}
    >>> k: dict[str, Any] = {}; mark_communication("ncclDevKernel_Generic(x)", k); k
    {'communication': True}
    """
    if api:
        m = _COLLECTIVE.match(name)
        if m is not None:
            args["communication"] = True
            args["Collective name"] = m.group(1).lower()
    elif name.lower().removeprefix("void ").lstrip().startswith(_COMM_PREFIXES):
        args["communication"] = True


def communication_flags(names: Sequence[str]) -> list[bool]:
    """`mark_communication`'s verdict for each kernel name, each distinct name judged once.

    >>> communication_flags(["ncclDevKernel_Generic", "gemm", "ncclDevKernel_Generic"])
    [True, False, True]
    """
    seen: dict[str, bool] = {}
    for name in names:
        if name not in seen:
            probe: dict[str, Any] = {}
            mark_communication(name, probe)
            seen[name] = bool(probe)
    return [seen[name] for name in names]


def copy_name(direction: str) -> str:
    """A Kineto-like memcpy name from a rocprof direction.

    >>> copy_name("MEMORY_COPY_HOST_TO_DEVICE"), copy_name("odd")
    ('Memcpy HtoD', 'Memcpy odd')
    """
    key = direction.removeprefix("MEMORY_COPY_")
    return f"Memcpy {_COPY_DIRECTIONS.get(key, key)}"


def api_kind(domain: str) -> EventKind:
    """Event kind of a rocprof API domain: roctx markers are annotations, the rest runtime.

    >>> api_kind("MARKER_CORE_API"), api_kind("HIP_RUNTIME_API")
    (<EventKind.ANNOTATION: 'annotation'>, <EventKind.RUNTIME: 'runtime'>)
    """
    upper = domain.upper()
    return EventKind.ANNOTATION if "MARKER" in upper or "ROCTX" in upper else EventKind.RUNTIME


class Devices:
    """Devices seen while parsing, by index, with properties merged from every source."""

    def __init__(self) -> None:
        self.by_index: dict[int, Device] = {}

    def see(self, index: int | None, name: str = "", **properties: Any) -> None:
        """Record a device (idempotent); later non-empty values fill gaps, never overwrite."""
        if index is None:
            return
        device = self.by_index.setdefault(index, Device(index=index))
        if name and not device.name:
            device.name = name
        for key, value in properties.items():
            if value not in (None, "") and key not in device.properties:
                device.properties[key] = value

    def sorted(self) -> list[Device]:
        """Devices in index order."""
        return [self.by_index[i] for i in sorted(self.by_index)]
