"""The shape of the stored trace summary: the contract the pages are built against.

`SummaryBuilder.finish` returns a `Summary`, stored in `traces.summary`, served by
`GET /api/v1/traces/{id}/summary` and printed by `perfdash ingest --json` under "summary".

The shape below is the contract the pages are built against. Units are in the field
names: `_ns` integer nanoseconds, `_bytes` integer bytes, `_pct` a float percentage in
[0, 100] rounded to 3 decimals. A figure that cannot be computed from the trace (no steps,
no memory events, no correlation ids...) is `None` or an empty list, never a fake 0.

Public surface: `Summary` and its parts, `SUMMARY_VERSION`.
"""

from __future__ import annotations

from typing import TypedDict

from ingest.distribution import Distribution

SUMMARY_VERSION = 1


class ExclusiveSplit(TypedDict):
    """A partition of span_ns: each instant counted once, by priority."""

    compute_ns: int
    communication_ns: int
    memcpy_ns: int
    memset_ns: int
    idle_ns: int


class TimeSplit(TypedDict):
    """How one device's (or all devices') GPU span was spent.

    `*_ns` below are unions of intervals, so compute_ns + memcpy_ns + ... may exceed
    busy_ns when categories ran at the same time on different streams. `exclusive` splits
    the span into parts that do add up to span_ns (priority: compute, communication,
    memcpy, memset; the rest is idle), for a stacked bar.
    """

    span_ns: int  # first GPU activity start to last GPU activity end (trace-wide GPU span)
    busy_ns: int  # union of every kernel, memcpy and memset interval
    idle_ns: int  # span_ns - busy_ns
    busy_pct: float  # busy_ns / span_ns
    idle_pct: float  # idle_ns / span_ns
    compute_ns: int  # union of non-communication kernels
    communication_ns: int  # union of communication kernels (NCCL/RCCL, see ingest.classify)
    memcpy_ns: int  # union of all memcpy activity
    copy_host_ns: int  # union of H2D and D2H memcpy (the copy-overlap denominator)
    memset_ns: int  # union of all memset activity
    exclusive: ExclusiveSplit
    comm_compute_overlap_ns: int  # time communication and compute kernels ran together
    comm_compute_overlap_pct: float | None  # overlap / communication_ns; None without comm
    copy_compute_overlap_ns: int  # time H2D or D2H copies ran together with compute
    copy_compute_overlap_pct: float | None  # overlap / copy_host_ns; None without copies


class DeviceSummary(TypedDict):
    """One GPU: its time split plus counts. (rank, device) is the key in multi-rank traces."""

    device: int
    rank: int | None
    streams: list[int]  # streams with kernel/memcpy/memset activity, ascending
    kernels: int  # number of kernel launches
    time: TimeSplit | None  # None when the trace has no timeline (Summary.timeline)


class GpuSummary(TypedDict):
    """All devices together: ns fields summed over devices, % recomputed from the sums."""

    devices: int
    kernels: int
    kernel_ns: int  # sum of kernel durations (the denominator of kernel `pct`)
    time: TimeSplit | None  # span_ns is the sum of per-device spans; None without a timeline


class Step(TypedDict):
    """One step: a CPU annotation range of the step marker (see `ingest.steps`)."""

    step: int  # N of `ProfilerStep#N` / `train_step_N`; 0, 1, ... for a repeated name
    rank: int | None
    start_ns: int  # CPU annotation start
    cpu_ns: int  # CPU annotation duration
    gpu_ns: int | None  # GPU work launched inside it and its mirrors; None if none


class StepSummary(TypedDict):
    """Per-step durations; `cpu`/`gpu` are None when there are no (mirrored) steps."""

    steps: list[Step]  # by rank, then step number
    cpu: Distribution | None
    gpu: Distribution | None
    marker: str | None  # the step marker used, e.g. "ProfilerStep#N"; None: no steps found
    marker_source: str | None  # "ProfilerStep", "auto", "user" or None (ingest.steps)


class LaunchSummary(TypedDict):
    """CPU launch (runtime call start) to GPU start delay of kernels, via correlation id.

    Negative delays (clock skew between CPU and GPU timestamps) are kept as measured.
    """

    delay: Distribution | None  # None when no kernel could be matched to its runtime call
    matched: int  # kernels matched to a runtime call
    unmatched: int  # kernels whose correlation id had no runtime call


class CopyKind(TypedDict):
    """Memcpy/memset traffic of one kind, e.g. "HtoD" from "Pinned" to "Device"."""

    op: str  # "memcpy" or "memset"
    kind: str  # "HtoD", "DtoH", "DtoD", "PtoP", "" for memset, ... as the trace names it
    src: str  # memory kind, e.g. "Pinned", "Pageable", "Device"; "" when absent
    dst: str
    count: int
    bytes: int
    total_ns: int
    bandwidth_gbps: float | None  # bytes / total_ns (GB/s); None when total_ns == 0


class TransferSummary(TypedDict):
    """Host-device copy bytes and how much of the host side was pinned or pageable."""

    h2d_bytes: int
    d2h_bytes: int
    d2d_bytes: int
    other_bytes: int  # peer copies and unknown kinds
    pinned_bytes: int  # H2D + D2H bytes whose host side is pinned
    pageable_bytes: int  # H2D + D2H bytes whose host side is pageable
    pinned_pct: float | None  # pinned / (pinned + pageable); None when neither occurred
    pageable_pct: float | None
    h2d_pageable_pct: float | None  # pageable share of H2D bytes alone
    kinds: list[CopyKind]  # by bytes, largest first


class MemorySeries(TypedDict):
    """Allocator totals over time, downsampled to <= ~2,000 points keeping every peak."""

    ts_ns: list[int]
    allocated_bytes: list[int]
    reserved_bytes: list[int]


class DeviceMemory(TypedDict):
    """Peak memory of one device from `[memory]` events (allocator totals after each)."""

    device: int
    rank: int | None
    samples: int  # number of [memory] events for this device
    peak_allocated_bytes: int
    peak_allocated_ts_ns: int
    peak_reserved_bytes: int
    peak_reserved_ts_ns: int
    series: MemorySeries


class PhaseMemory(TypedDict):
    """Peak memory while a training phase ran (see ingest.phases for the naming rule)."""

    phase: str  # "forward", "backward" or "optimizer"
    device: int
    rank: int | None
    duration_ns: int  # union of the phase's intervals
    peak_allocated_bytes: int | None  # None when no [memory] event fell inside the phase
    peak_reserved_bytes: int | None


class FusionSummary(TypedDict):
    """Share of kernel time in fused kernels, by the naming rule in ingest.classify."""

    fused_ns: int
    kernel_ns: int
    fused_pct: float | None  # None when there are no kernels
    rule: str  # human-readable statement of the naming rule
    by_pattern: dict[str, int]  # matched pattern -> ns (a kernel counts for its first match)


class Collective(TypedDict):
    """Communication kernels of one collective ("allreduce", ...; "" when not recorded)."""

    collective: str
    count: int
    total_ns: int
    bytes: int | None  # sum of In msg nelems x dtype size, None when sizes are absent
    max_msg_bytes: int | None
    max_in_msg_nelems: int | None
    group_sizes: list[int]
    dtypes: list[str]


class CommunicationSummary(TypedDict):
    """Communication kernels (NCCL/RCCL) grouped by collective, largest total first."""

    kernels: int
    total_ns: int
    collectives: list[Collective]


class IdleGap(TypedDict):
    """A stretch where one device ran nothing, with what the CPU was doing as it began."""

    device: int
    rank: int | None
    start_ns: int
    dur_ns: int
    cpu_op: str | None  # innermost cpu_op running at start_ns (latest start), if any
    runtime: str | None  # runtime call running at start_ns (e.g. cudaStreamSynchronize)
    host_sync: bool  # cpu_op or runtime is a host-synchronising call (ingest.classify)


class Summary(TypedDict):
    """Everything the trace pages read, computed once at ingest."""

    version: int  # SUMMARY_VERSION
    events: int  # events added
    # False when the file records no times (Nsight Compute replays kernels one by one): then
    # no time split, idle gap or launch delay is derived from its made-up serial timeline.
    timeline: bool
    gpu: GpuSummary
    devices: list[DeviceSummary]  # by rank, then device
    steps: StepSummary
    launch: LaunchSummary
    transfers: TransferSummary
    memory: list[DeviceMemory]  # by rank, then device; empty without [memory] events
    memory_phases: list[PhaseMemory]  # empty without phase annotations
    fusion: FusionSummary
    communication: CommunicationSummary
    idle_gaps: list[IdleGap]  # the longest 20 per device, longest first
