"""Which lane an event is drawn in, the lane's label, and the colour category of an item.

Pure rules shared by the ingest-time index (`timeline_index`) and the window queries
(`timeline`), so the two can never disagree about where an event belongs.

Public surface: `LaneKey`, `lane_key`, `FAMILY_KINDS`, `sort_key`, `lane_label`,
`category`, `GPU_FAMILIES`.
"""

from functools import lru_cache
from typing import NamedTuple

from ingest.classify import is_communication_name

# Lane families: GPU work per (rank, device, stream), CPU work per (rank, pid, tid).
GPU = "gpu"
SYNC = "sync"
GPU_ANNOTATION = "gpu_annotation"
CPU = "cpu"
ANNOTATION = "annotation"
DEVICE = "device"  # hidden: the union of a device's GPU lanes, for the utilisation strip

FAMILY_KINDS: dict[str, tuple[str, ...]] = {
    GPU: ("kernel", "memcpy", "memset"),
    SYNC: ("sync",),
    GPU_ANNOTATION: ("gpu_annotation",),
    CPU: ("cpu_op", "runtime", "python"),
    ANNOTATION: ("annotation",),
}
KIND_FAMILY = {kind: family for family, kinds in FAMILY_KINDS.items() for kind in kinds}
GPU_FAMILIES = frozenset({GPU, SYNC, GPU_ANNOTATION})
# Within one device (or thread), annotation lanes sit above the work they annotate.
_FAMILY_ORDER = {GPU_ANNOTATION: 0, GPU: 1, SYNC: 2, ANNOTATION: 0, CPU: 1, DEVICE: 3}
_SYNC_WORDS = ("synchronize", "streamwaitevent", "eventquery", "streamquery")


class LaneKey(NamedTuple):
    """Identity of a lane: its family, rank, and (device, stream) or (pid, tid)."""

    family: str
    rank: int | None
    a: int | None
    b: int | None


def lane_key(
    kind: str,
    rank: int | None,
    device: int | None,
    stream: int | None,
    pid: int | None,
    tid: int | None,
) -> LaneKey | None:
    """The lane of an event, or None for kinds the timeline does not draw (memory instants).

    >>> lane_key("kernel", None, 0, 7, None, None)
    LaneKey(family='gpu', rank=None, a=0, b=7)
    >>> lane_key("memory", None, None, None, 1, 2) is None
    True
    """
    family = KIND_FAMILY.get(kind)
    if family is None:
        return None
    if family in GPU_FAMILIES:
        return LaneKey(family, rank, device, stream)
    return LaneKey(family, rank, pid, tid)


def sort_key(key: LaneKey) -> tuple[int, int, int, int, int, int]:
    """GPU lanes first (by rank, device, stream), then CPU lanes (by rank, pid, tid)."""
    group = 0 if key.family in GPU_FAMILIES or key.family == DEVICE else 1
    a = -1 if key.a is None else key.a
    b = -1 if key.b is None else key.b
    rank = -1 if key.rank is None else key.rank
    # A device's (or process's) lanes stay together; annotations sit above each stream.
    return (group, rank, a, b, _FAMILY_ORDER[key.family], 0)


# "No stream" as CUPTI/Kineto write it: -1, or -1 printed as an unsigned 32/64-bit number.
NO_STREAM = frozenset({-1, (1 << 32) - 1, (1 << 64) - 1})


class Channel(NamedTuple):
    """A Metal GPU channel (Vertex, Fragment, Compute, Blit): how Instruments names the lanes
    of an xctrace trace, passed to `lane_label` in place of a queue."""

    name: str


def lane_label(
    key: LaneKey, *, communication: bool = False, queue: object = None, show_rank: bool = True
) -> str:
    """The label users know: "GPU 0 · stream 7", "rank 3 · GPU 0 · stream 13 (NCCL)".

    `show_rank` is False for single-rank traces, where "rank 0 ·" on every lane is noise.

    >>> lane_label(LaneKey("gpu", 3, 0, 13), communication=True)
    'rank 3 · GPU 0 · stream 13 (NCCL)'
    >>> lane_label(LaneKey("gpu", None, 1, 0), queue=1)
    'GPU 1 · queue 1'
    >>> lane_label(LaneKey("gpu", None, 0, 3), queue=Channel("Compute"))
    'GPU 0 · Compute channel'
    >>> lane_label(LaneKey("annotation", None, 4242, 4242))
    'pid 4242 · thread 4242 · annotations'

    A sync that waits on an event, the context or the device belongs to no stream; CUPTI
    writes its stream as -1, which some Kineto versions print unsigned (2^32 - 1):
    >>> lane_label(LaneKey("sync", None, 0, 4294967295))
    'GPU 0 · event/context/device syncs (no stream)'
    """
    prefix = "" if key.rank is None or not show_rank else f"rank {key.rank} · "
    if key.family == DEVICE:
        return f"{prefix}GPU {key.a} · all streams"
    if key.b in NO_STREAM and queue is None and key.family in GPU_FAMILIES:
        what = "event/context/device syncs" if key.family == SYNC else "work"
        return f"{prefix}GPU {key.a} · {what} (no stream)"
    if key.family in GPU_FAMILIES:
        where = f"queue {queue}" if queue is not None else f"stream {key.b}"
        if isinstance(queue, Channel):
            where = f"{queue.name} channel"
        suffix = {GPU: " (NCCL)" if communication else "", SYNC: " (sync)"}.get(
            key.family, " · annotations"
        )
        return f"{prefix}GPU {key.a} · {where}{suffix}"
    suffix = " · annotations" if key.family == ANNOTATION else ""
    return f"{prefix}pid {key.a} · thread {key.b}{suffix}"


def is_sync_call(name: str) -> bool:
    """A CPU runtime call that blocks on the GPU (cudaStreamSynchronize, hipDeviceSynchronize...).

    >>> is_sync_call("cudaStreamSynchronize"), is_sync_call("cudaLaunchKernel")
    (True, False)
    """
    lowered = name.lower()
    return any(word in lowered for word in _SYNC_WORDS)


def category(kind: str, name: str) -> str:
    """Colour category: compute, communication, memcpy by direction, memset, CPU work...

    >>> category("memcpy", "Memcpy HtoD (Pageable -> Device)")
    'memcpy_htod'
    >>> category("kernel", "ncclKernel_AllGather")
    'communication'
    """
    if kind == "kernel":
        return _kernel_category(name)
    if kind == "memcpy":
        for direction in ("HtoD", "DtoH", "DtoD", "PtoP"):
            if direction in name:
                return f"memcpy_{direction.lower()}"
        return "memcpy"
    if kind in ("gpu_annotation", "annotation"):
        return "annotation"
    return kind if kind in ("memset", "cpu_op", "runtime", "python", "sync") else "other"


@lru_cache(maxsize=65_536)
def _kernel_category(name: str) -> str:
    """A kernel's category, remembered: a window asks for each of its thousands of kernels,
    and the name test is a regex search over names of up to kilobytes."""
    return "communication" if is_communication_name(name) else "compute"


@lru_cache(maxsize=65_536)
def family_category(family: str, top_name: str) -> str:
    """Colour category of a merged block: by its lane family and dominant name
    (remembered, as `_kernel_category`: a blocks window asks it of thousands of blocks)."""
    if family in (GPU, DEVICE):
        return "communication" if is_communication_name(top_name) else "compute"
    return {SYNC: "sync", CPU: "cpu_op"}.get(family, "annotation")


def group_of(family: str) -> str:
    """'gpu' or 'cpu': the collapsible group a lane belongs to."""
    return "gpu" if family in GPU_FAMILIES or family == DEVICE else "cpu"
