"""Run one query in a child process with an address-space limit, killed at the deadline.

DuckDB's own limits do not cover everything a SELECT can do: one scalar call that builds
a huge value (`repeat('x', 2000000000)`) is neither interruptible nor counted against
`memory_limit`; in the API process it held a request thread for a minute and 8 GB. In a
child forked from a small forkserver (DuckDB preloaded, so a fork costs milliseconds) it
meets `RLIMIT_AS` (the child's size after start-up, plus QUERY_MEMORY_LIMIT, plus
`_HEADROOM`) and fails at once; and a child still running `_KILL_GRACE_S` after the time
limit is killed. A crash of DuckDB ends the child, not the server. The rows are fetched a
batch at a time and cut in the child once they pass QUERY_MAX_ANSWER_BYTES as JSON, so the
API process never receives more (a 300 MB result raised it from 240 to 906 MB).

Like every forkserver or spawn start, the child imports the server's main module: a script
that runs queries needs the `if __name__ == "__main__":` guard (`perfdash`, uvicorn and
pytest have it); without one the child re-runs the script and the query answers 422.

Public surface: `run_in_child`, `Limits`, `Outcome`.
"""

from __future__ import annotations

import json
import multiprocessing
import re
import resource
import threading
import time
from dataclasses import dataclass
from functools import lru_cache
from multiprocessing.connection import Connection
from multiprocessing.context import ForkServerContext
from pathlib import Path
from typing import Any

import duckdb

from backend.services.query.sandbox import open_sandbox, private_link
from backend.services.query.values import to_json_value

# What a child answers: an "ok" tuple with the columns, types, rows (JSON values), what
# cut the rows (None, "rows" or "bytes") and elapsed_ms; or an "error" tuple with a kind
# (timeout, memory, permission, failed, crashed) and DuckDB's message.
Outcome = tuple[Any, ...]
_KILL_GRACE_S = 2.0
_BATCH = 2048
_HEADROOM = 512 * 1024**2  # Python's own allocations: result rows, pickling
_UNITS = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
          "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}  # fmt: skip


@dataclass(frozen=True)
class Limits:
    """What one query may take: rows, bytes of answer, threads, memory and time."""

    rows: int
    answer_bytes: int
    threads: int
    memory: str  # DuckDB's units: '1GB'
    timeout_s: float


def run_in_child(events: Path, sql: str, limits: Limits) -> Outcome:
    """Execute `sql` over `events` in a sandbox in a child process; its outcome.

    The child reads `events` through a private hard link (`private_link`), made and
    removed here, so a child killed at the deadline leaves no link behind.
    """
    with private_link(events) as link:
        return _run(link, sql, limits)


def _run(events: Path, sql: str, limits: Limits) -> Outcome:
    context = _context()
    receive, send = context.Pipe(duplex=False)
    args = (send, str(events), sql, limits)
    child = context.Process(target=_child_main, args=args, daemon=True)
    child.start()
    send.close()
    try:
        if receive.poll(limits.timeout_s + _KILL_GRACE_S):
            try:
                outcome: Outcome = receive.recv()
                return outcome
            except EOFError:
                child.join(5)
                return ("error", "crashed", f"it ended with exit code {child.exitcode}")
        return ("error", "timeout", "killed at the deadline")
    finally:
        receive.close()
        if child.is_alive():
            child.kill()
        child.join(5)


@lru_cache(maxsize=1)
def _context() -> ForkServerContext:
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])
    return context


def _child_main(send: Connection, events: str, sql: str, limits: Limits) -> None:
    """The child: cap the address space, open the sandbox, run, send the outcome."""
    try:
        _cap_address_space(_bytes(limits.memory) + _HEADROOM)
        con = open_sandbox(Path(events), threads=limits.threads, memory_limit=limits.memory)
        try:
            outcome = _execute(con, sql, limits)
        finally:
            con.close()
    except MemoryError:
        outcome = ("error", "memory", "out of memory")
    except Exception as e:  # anything else: the child says what, the API answers 422
        outcome = ("error", "failed", str(e))
    send.send(outcome)
    send.close()


def _execute(con: duckdb.DuckDBPyConnection, sql: str, limits: Limits) -> Outcome:
    timer = threading.Timer(limits.timeout_s, con.interrupt)
    started = time.perf_counter()
    timer.start()
    try:
        cursor = con.execute(sql)
        columns = [d[0] for d in cursor.description or []]
        types = [str(d[1]) for d in cursor.description or []]
        values, cut = _fetch(cursor, limits.rows, limits.answer_bytes)
    except duckdb.InterruptException:
        return ("error", "timeout", "interrupted")
    except duckdb.OutOfMemoryException as e:
        return ("error", "memory", str(e))
    except duckdb.PermissionException as e:
        return ("error", "permission", str(e))
    except duckdb.Error as e:
        return ("error", "failed", str(e))
    finally:
        timer.cancel()
    elapsed_ms = round((time.perf_counter() - started) * 1000, 3)
    return ("ok", columns, types, values, cut, elapsed_ms)


def _fetch(
    cursor: duckdb.DuckDBPyConnection, limit: int, max_bytes: int
) -> tuple[list[list[Any]], str | None]:
    """At most `limit` rows as JSON values, and no more than `max_bytes` of them as JSON
    text, fetched a batch at a time so the child never holds the whole result; and what
    cut them (`rows`, `bytes`, or None when the result ended first)."""
    values: list[list[Any]] = []
    size = 0
    while len(values) < limit:
        batch = cursor.fetchmany(min(_BATCH, limit - len(values)))
        if not batch:
            return values, None
        for row in batch:
            converted = [to_json_value(v) for v in row]
            size += len(json.dumps(converted, default=str).encode()) + 1
            if size > max_bytes:
                return values, "bytes"
            values.append(converted)
    return values, "rows" if cursor.fetchone() is not None else None


def _cap_address_space(extra: int) -> None:
    """RLIMIT_AS at this process's size now plus `extra` (DuckDB reserves address space
    at start-up, so an absolute cap would be wrong on another build)."""
    with open("/proc/self/status") as f:
        size_kb = next(int(line.split()[1]) for line in f if line.startswith("VmSize:"))
    cap = size_kb * 1024 + extra
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))


def _bytes(text: str) -> int:
    """`'1GB'` as bytes, in DuckDB's units (GB = 10^9, GiB = 2^30).

    >>> _bytes("1GB"), _bytes("512 MiB"), _bytes("1.5KB")
    (1000000000, 536870912, 1500)
    """
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]+)\s*", text)
    if not match or match.group(2).upper() not in _UNITS:
        raise ValueError(f"not a size: {text!r}")
    return int(float(match.group(1)) * _UNITS[match.group(2).upper()])
