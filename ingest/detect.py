"""Format detection from a file's content (not its name), in one place.

Every parser offers a ``sniff(path, head, source)`` hook: the file's format when the parser
recognises it, None when not, or `UnsupportedFormatError` when it recognises something it
will not read (and can say why). `SNIFFERS` asks them in order; no parser imports this
module. Most hooks look at `head`, the first 4 KB decompressed; a few read further by
structure (Kineto's, for a ``traceEvents`` array behind a large ``metadata`` object, within the
16 MB the JSON reader allows; rocprof's and nsys's, at an SQLite file's tables).

Public surface: `detect_trace_format`, `SNIFFERS`, `UNRECOGNISED`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ingest._io import read_head
from ingest.errors import UnsupportedFormatError
from ingest.events import TraceFormat
from ingest.parsers import kineto, ncu, nsys, rocprof, torch_memsnap, xctrace

UNRECOGNISED = "not a trace perfdash recognises"
Sniff = Callable[[Path, bytes, str], TraceFormat | None]
# Order matters where two formats share a container: rocprof v1's results.json is a Chrome
# trace and rocpd is SQLite, so rocprof asks before Kineto and nsys; ncu's CSV headers are
# checked before rocprof's loose last resort.
SNIFFERS: tuple[Sniff, ...] = (
    torch_memsnap.sniff,
    rocprof.sniff,
    xctrace.sniff,
    nsys.sniff,
    ncu.sniff,
    kineto.sniff,
    rocprof.sniff_loose,
)


def detect_trace_format(path: Path, source: str = "") -> TraceFormat:
    """Return the trace format of the file at `path`.

    Raises:
        UnsupportedFormatError: the content matches no known format, or a known kind of file
            that holds no trace (a rocprof v1 database, a non-snapshot pickle, ...).
    """
    head = read_head(path)
    name = source or path.name
    stripped = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not stripped:
        raise UnsupportedFormatError(f"{name}: the file is empty")
    for sniff in SNIFFERS:
        fmt = sniff(path, head, name)
        if fmt is not None:
            return fmt
    raise UnsupportedFormatError(
        f"{name}: {UNRECOGNISED} (expected torch.profiler JSON, "
        f"an Nsight Systems sqlite export, Nsight Compute CSV, rocprof output, an xctrace "
        f"export or a torch.cuda.memory snapshot pickle); "
        f"it starts with {stripped[:32].decode(errors='replace')!r}"
    )
