"""Make glibc's malloc give a large ingest's freed buffers back to the operating system.

An ingest decodes a trace in pieces of a few MB. glibc serves blocks of at least
`M_MMAP_THRESHOLD` with `mmap` and returns them on `free`, but it raises that threshold
each time such a block is freed (up to 32 MB), after which the pieces come from the heap,
where a few long-lived objects allocated between them keep the freed space from ever being
returned. Peak RSS then grows with the trace instead of with one piece: measured on the
2.46M-event torch trace, 384 MB with the sliding threshold and 334 MB with it pinned
(`docs/PERFORMANCE.md`). Setting the threshold explicitly also stops the sliding.

Public surface: `pin_mmap_threshold`.
"""

import ctypes
import ctypes.util
import logging
from functools import cache

log = logging.getLogger(__name__)

_M_MMAP_THRESHOLD = -3  # glibc's <malloc.h>
MMAP_THRESHOLD_BYTES = 128 * 1024  # glibc's own starting value


@cache
def pin_mmap_threshold() -> bool:
    """Pin glibc's mmap threshold at its default (once per process; a no-op elsewhere).

    Returns:
        Whether the allocator was tuned (False on a libc without `mallopt`, e.g. musl).
    """
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    tuned = bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES))
    if not tuned:
        log.warning("mallopt(M_MMAP_THRESHOLD) refused; ingest memory may grow with trace size")
    return tuned
