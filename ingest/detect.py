"""Format detection from the first kilobytes of a file (its content, not its name)."""

from __future__ import annotations

from pathlib import Path

from ingest._io import read_head
from ingest.errors import UnsupportedFormatError
from ingest.events import TraceFormat
from ingest.parsers.rocprof.sniff import sniff_format as sniff_rocprof
from ingest.parsers.torch_memsnap import is_memory_snapshot
from ingest.parsers.xctrace import looks_like_export as is_xctrace_export
from ingest.tools import is_ncu_report, is_nsys_report

_SQLITE_MAGIC = b"SQLite format 3\x00"
_NCU_PREAMBLE = ("==PROF==", "==WARNING==", "==ERROR==")
_NCU_HEADERS = ('"ID","Process ID"', '"Process ID","Process Name","Host Name","Kernel Name"')
_KINETO_KEYS = (b'"traceEvents"', b'"schemaVersion"', b'"deviceProperties"', b'"displayTimeUnit"')


def is_kineto_head(head: bytes) -> bool:
    """Whether the first bytes (decompressed) read as a torch.profiler / Chrome trace."""
    stripped = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if stripped.startswith(b"{") and any(k in head for k in _KINETO_KEYS):
        return True
    return stripped.startswith(b"[") and b'"ph"' in head and b'"ts"' in head  # bare array


def detect_trace_format(path: Path, source: str = "") -> TraceFormat:
    """Return the trace format of the file at `path`.

    Raises:
        UnsupportedFormatError: the content matches no known format.
    """
    head = read_head(path)
    name = source or path.name
    stripped = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not stripped:
        raise UnsupportedFormatError(f"{name}: the file is empty")
    if is_memory_snapshot(head):
        return TraceFormat.TORCH_MEMORY_SNAPSHOT
    if head.startswith(b"\x80") and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        raise UnsupportedFormatError(
            f"{name}: a Python pickle, but not a torch.cuda.memory snapshot (no 'segments' "
            "or 'device_traces' key near the start); perfdash unpickles only memory snapshots"
        )
    if (rocprof := sniff_rocprof(path, head)) is not None:
        return rocprof  # before Kineto: rocprof v1's results.json is a Chrome trace too
    if is_xctrace_export(head):
        return TraceFormat.XCTRACE_XML
    if head.startswith(_SQLITE_MAGIC) or is_nsys_report(head, name):
        return TraceFormat.NSYS_SQLITE  # the nsys parser names any missing tables
    if is_ncu_report(head, name):
        return TraceFormat.NCU_CSV
    if is_kineto_head(head):
        return TraceFormat.KINETO
    text = stripped.decode("utf-8", errors="replace")
    if text.startswith(_NCU_PREAMBLE) or any(h in text for h in _NCU_HEADERS):
        return TraceFormat.NCU_CSV
    if "KernelName" in text.splitlines()[0] or "Kernel_Name" in text.splitlines()[0]:
        return TraceFormat.ROCPROF_CSV
    raise UnsupportedFormatError(
        f"{name}: not a trace perfdash recognises (expected torch.profiler JSON, "
        f"an Nsight Systems sqlite export, Nsight Compute CSV, rocprof output, an xctrace "
        f"export or a torch.cuda.memory snapshot pickle); "
        f"it starts with {stripped[:32].decode(errors='replace')!r}"
    )
