"""Run flags: what a GPU runner (or CI) noticed about the machine while a run measured.

A runner writes ``environment["flags"]`` into the pushed document, a list of
``{"flag", "gpu", "reason", "detail"}``. `throttled` (clocks held down: power cap,
thermal, low clock) and `contended` (another process on the GPU) make a run's numbers
suspect; `unlocked` (clocks not locked), `unjudged` (too few samples to judge reasons by)
and `other_process_present` (a process held the GPU but used none of it) are information.
Pure code: the push validates the list (`check_flags`), the SLA rules and the series page
read it back.

Public surface: `FLAG_NAMES`, `SUSPECT_FLAGS`, `MAX_FLAGS`, `check_flags`, `run_flags`,
`suspect_flags`, `describe_flags`.
"""

from collections.abc import Callable
from typing import Any

FLAG_NAMES = ("throttled", "contended", "unlocked", "unjudged", "other_process_present")
SUSPECT_FLAGS = frozenset({"throttled", "contended"})
MAX_FLAGS = 32
MAX_GPU = 4096
_TEXT_LIMITS = {"flag": 32, "reason": 64, "detail": 512}


def check_flags(raw: Any, path: str, add: Callable[[str, str], None]) -> None:
    """Report (through `add(path, message)`) every way `raw` breaks the flags contract:
    a list of at most `MAX_FLAGS` objects with a known `flag`, an optional `gpu` index,
    and `reason`/`detail` strings of bounded length; no other keys."""
    if not isinstance(raw, list):
        add(path, f"expected a list of flag objects, got {type(raw).__name__}")
        return
    if len(raw) > MAX_FLAGS:
        add(path, f"{len(raw)} flags, the limit is {MAX_FLAGS}")
        return
    for i, item in enumerate(raw):
        where = f"{path}[{i}]"
        if not isinstance(item, dict):
            add(where, f"expected an object, got {type(item).__name__}")
            continue
        for key in sorted(set(item) - {"flag", "gpu", *_TEXT_LIMITS}, key=str)[:3]:
            add(where, f"unknown key {key!r}; a flag has flag, gpu, reason, detail")
        if item.get("flag") not in FLAG_NAMES:
            got = repr(item.get("flag"))[:40]
            add(f"{where}.flag", f"must be one of {', '.join(FLAG_NAMES)}, got {got}")
        gpu = item.get("gpu")
        if gpu is not None and (
            isinstance(gpu, bool) or not isinstance(gpu, int) or not 0 <= gpu <= MAX_GPU
        ):
            add(f"{where}.gpu", f"expected a GPU index 0..{MAX_GPU}")
        for key, limit in _TEXT_LIMITS.items():
            value = item.get(key)
            if key != "flag" and value is not None and not isinstance(value, str):
                add(f"{where}.{key}", f"expected a string, got {type(value).__name__}")
            elif isinstance(value, str) and len(value) > limit:
                add(f"{where}.{key}", f"longer than {limit} characters")


def run_flags(environment: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The flags a run's environment carries (validated at push time)."""
    flags = (environment or {}).get("flags")
    return [f for f in flags if isinstance(f, dict)] if isinstance(flags, list) else []


def suspect_flags(environment: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The flags that make a run's numbers suspect (throttled, contended)."""
    return [f for f in run_flags(environment) if f.get("flag") in SUSPECT_FLAGS]


def describe_flags(flags: list[dict[str, Any]]) -> str:
    """One line for a hover or a tile.

    >>> describe_flags([{"flag": "throttled", "gpu": 0, "reason": "sw_power_cap"}])
    'throttled (GPU 0, sw_power_cap)'
    """
    parts = []
    for f in flags:
        bits = [f"GPU {f['gpu']}" if f.get("gpu") is not None else "", str(f.get("reason") or "")]
        inner = ", ".join(b for b in bits if b)
        parts.append(f"{f.get('flag')}" + (f" ({inner})" if inner else ""))
    return "; ".join(parts)
