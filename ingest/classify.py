"""Naming rules that classify events for the summaries, shared by every format's parser.

Each rule is a plain function of an event or a name, with its rule stated in the docstring,
so a page can quote it and a test can pin it down. The summary builder calls them once per
distinct name, never once per event.

Public surface: `is_communication`, `fusion_pattern`, `FUSION_RULE`, `copy_kind`,
`CopyName`, `is_host_sync`, `phase_of`.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from ingest.events import Event, EventKind

_COMM_PREFIXES = ("nccl", "rccl", "msccl", "hccl")
FUSION_PATTERNS = ("triton_", "fused", "fusion", "flash", "fmha", "sdpa", "multi_tensor_apply")
FUSION_RULE = (
    "a kernel is fused when its lower-cased name contains one of: "
    + ", ".join(FUSION_PATTERNS)
    + " (Inductor/Triton kernels, fused attention, fused optimizers); first match wins"
)
_HOST_SYNC_OPS = frozenset(
    {"aten::item", "aten::_local_scalar_dense", "aten::nonzero", "aten::is_nonzero", "aten::equal"}
)
_COPY_WORDS = {
    "HtoD": "HtoD", "Host-to-Device": "HtoD", "DtoH": "DtoH", "Device-to-Host": "DtoH",
    "DtoD": "DtoD", "Device-to-Device": "DtoD", "PtoP": "PtoP", "Peer-to-Peer": "PtoP",
    "HtoH": "HtoH", "Host-to-Host": "HtoH",
}  # fmt: skip
_ENDPOINTS = re.compile(r"\((\w+) -> (\w+)\)")
_MEMSET_KIND = re.compile(r"Memset \((\w+)\)")


def is_communication_name(name: str) -> bool:
    """Whether a kernel name is a collective library's: lower-cased, without a leading
    ``void ``, it starts with ``nccl``, ``rccl``, ``msccl`` or ``hccl``.

    >>> is_communication_name("void ncclDevKernel_AllReduce_Sum_bf16_RING_LL(x)")
    True
    """
    return name.lower().removeprefix("void ").lstrip().startswith(_COMM_PREFIXES)


def is_communication(event: Event) -> bool:
    """True for a collective-communication kernel (NCCL, RCCL, MSCCL).

    Rule: a kernel whose name passes `is_communication_name`, or whose args carry a
    ``Collective name`` (set by ``record_param_comms``). Parsers of other formats keep the
    library's kernel names, so the same rule holds for nsys and rocprof traces.

    >>> is_communication(Event(EventKind.KERNEL, "ncclDevKernel_AllReduce_Sum_f32", 0, 1))
    True
    >>> is_communication(Event(EventKind.KERNEL, "void at::native::reduce_kernel<512>", 0, 1))
    False
    """
    if event.kind is not EventKind.KERNEL:
        return False
    return is_communication_name(event.name) or bool(event.args and "Collective name" in event.args)


def fusion_pattern(name: str) -> str | None:
    """The first `FUSION_PATTERNS` entry found in the lower-cased kernel name, or None.

    >>> fusion_pattern("triton_poi_fused_add_gelu_0"), fusion_pattern("nvjet_sm90_tst")
    ('triton_', None)
    >>> fusion_pattern("void pytorch_flash::flash_fwd_kernel<...>")
    'flash'
    """
    lowered = name.lower()
    return next((p for p in FUSION_PATTERNS if p in lowered), None)


class CopyName(NamedTuple):
    """A memcpy/memset name taken apart: direction and the memory kinds at each end."""

    kind: str
    src: str
    dst: str


def copy_kind(name: str) -> CopyName:
    """Direction and endpoint memory kinds from a memcpy or memset name.

    Kineto writes ``Memcpy HtoD (Pageable -> Device)`` and ``Memset (Device)``; nsys
    writes ``[CUDA memcpy Host-to-Device]``. Unknown parts are "".

    >>> copy_kind("Memcpy HtoD (Pageable -> Device)")
    CopyName(kind='HtoD', src='Pageable', dst='Device')
    >>> copy_kind("[CUDA memcpy Device-to-Host]"), copy_kind("Memset (Device)")
    (CopyName(kind='DtoH', src='', dst=''), CopyName(kind='', src='', dst='Device'))
    """
    kind = next((k for word, k in _COPY_WORDS.items() if word in name), "")
    ends = _ENDPOINTS.search(name)
    if ends:
        return CopyName(kind, ends.group(1), ends.group(2))
    memset = _MEMSET_KIND.search(name)
    return CopyName(kind, "", memset.group(1) if memset else "")


def is_host_sync(name: str) -> bool:
    """True for a call that makes the CPU wait for the GPU.

    Rule: a runtime/driver call whose name contains ``Synchronize`` (cudaStreamSynchronize,
    cudaDeviceSynchronize, hipEventSynchronize, cuCtxSynchronize...), a blocking
    ``cudaMemcpy``/``hipMemcpy``, or an ATen op that reads a GPU value on the host
    (`aten::item`, `aten::_local_scalar_dense`, `aten::nonzero`, `aten::is_nonzero`,
    `aten::equal`).

    >>> is_host_sync("cudaStreamSynchronize"), is_host_sync("aten::item")
    (True, True)
    >>> is_host_sync("cudaMemcpyAsync"), is_host_sync("aten::mm")
    (False, False)
    """
    return "Synchronize" in name or name in _HOST_SYNC_OPS or name in ("cudaMemcpy", "hipMemcpy")


def phase_of(kind: EventKind, name: str) -> str | None:
    """The training phase a CPU-side range marks, or None.

    Rule, first match wins, on user annotations (``record_function`` ranges):
    ``optimizer`` when the name starts with ``Optimizer.`` (torch's ``Optimizer.step#...``
    and ``Optimizer.zero_grad#...``) or contains "optimizer"; ``backward`` when it contains
    "backward" (``## backward ##``); ``forward`` when it contains "forward"
    (``## forward ##``, ``DistributedDataParallel.forward``). Case-insensitive. A cpu_op
    ``autograd::engine::evaluate_function: ...`` also marks ``backward``, since eager
    backward passes have no annotation. GPU mirrors are not phases (their CPU range is).

    >>> phase_of(EventKind.ANNOTATION, "Optimizer.step#AdamW.step")
    'optimizer'
    >>> phase_of(EventKind.CPU_OP, "autograd::engine::evaluate_function: MmBackward0")
    'backward'
    >>> phase_of(EventKind.ANNOTATION, "## forward ##"), phase_of(EventKind.CPU_OP, "forward")
    ('forward', None)
    """
    if kind is EventKind.CPU_OP:
        return "backward" if name.startswith("autograd::engine::evaluate_function") else None
    if kind is not EventKind.ANNOTATION:
        return None
    lowered = name.lower()
    if lowered.startswith("optimizer.") or "optimizer" in lowered:
        return "optimizer"
    if "backward" in lowered:
        return "backward"
    return "forward" if "forward" in lowered else None
