"""rocprofv3 ``--output-format json`` (``<prefix>_results.json``, FORMATS.md §4.3).

``{"rocprofiler-sdk-tool": [{metadata, agents, counters, strings, kernel_symbols,
callback_records, buffer_records}]}``. Records refer to names by number: a record's ``kind``
indexes ``strings.buffer_records`` and its ``operation`` that entry's ``operations``; kernel
names come from ``kernel_symbols`` by ``kernel_id``; agents are opaque handles, mapped to the
logical node ids the CSV output uses. Unlike the CSV, memory copies carry ``bytes`` here.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from ingest._io import read_all
from ingest.errors import ParseError
from ingest.events import Event, EventKind, ParseReport, TraceFormat, TraceHeader
from ingest.parsers.rocprof._common import (
    Devices,
    api_kind,
    copy_name,
    kernel_args,
    mark_communication,
)
from ingest.parsers.rocprof._files import RocFile

_API_SECTIONS = ("hip_api", "hsa_api", "marker_api", "rccl_api", "hip_runtime_api", "kfd_api")


def parse(
    f: RocFile, header: TraceHeader, devices: Devices, report: ParseReport, *, max_bytes: int
) -> Iterator[Event]:
    """Load and check the file now; return the events of every process entry in it.

    Raises:
        ParseError: invalid JSON or no ``rocprofiler-sdk-tool`` list.
    """
    try:
        doc = orjson.loads(read_all(f.path, max_bytes=max_bytes, source=f.name))
    except orjson.JSONDecodeError as e:
        raise ParseError(f"invalid JSON: {e.msg}", source=f.name, offset=e.pos) from e
    tools = doc.get("rocprofiler-sdk-tool") if isinstance(doc, dict) else None
    if not isinstance(tools, list):
        raise ParseError("not a rocprofv3 JSON: no 'rocprofiler-sdk-tool' list", source=f.name)
    header.format = TraceFormat.ROCPROFV3_JSON
    header.metadata["profiler"] = "rocprofv3"
    return _events(tools, devices, report)


def _events(tools: list[Any], devices: Devices, report: ParseReport) -> Iterator[Event]:
    for i, tool in enumerate(tools):
        if isinstance(tool, dict):
            yield from _Tool(tool, devices, report, f"rocprofiler-sdk-tool[{i}]").events()


class _Tool:
    """Lookup tables of one process entry."""

    def __init__(self, tool: dict[str, Any], devices: Devices, report: ParseReport, where: str):
        self.tool, self.devices, self.report, self.where = tool, devices, report, where
        strings = tool.get("strings") or {}
        self.kinds = [e for e in strings.get("buffer_records") or [] if isinstance(e, dict)]
        self.symbols = {
            s.get("kernel_id"): s for s in tool.get("kernel_symbols") or [] if isinstance(s, dict)
        }
        self.agents: dict[Any, int] = {}
        for agent in tool.get("agents") or []:
            handle = (agent.get("id") or {}).get("handle")
            index = agent.get("logical_node_id", agent.get("node_id"))
            if isinstance(index, int):
                self.agents[handle] = index
                if str(agent.get("type")) in ("2", "GPU", "AGENT_TYPE_GPU"):
                    devices.see(
                        index,
                        str(agent.get("product_name") or agent.get("name") or ""),
                        vendor="AMD",
                        arch=agent.get("name"),
                        compute_units=agent.get("cu_count"),
                    )
        pid = (tool.get("metadata") or {}).get("pid")
        self.pid = pid if isinstance(pid, int) else None
        self.markers = _marker_messages(strings.get("marker_api"))

    def op_name(self, record: dict[str, Any]) -> tuple[str, str]:
        kind, op = record.get("kind"), record.get("operation")
        entry = self.kinds[kind] if isinstance(kind, int) and 0 <= kind < len(self.kinds) else {}
        ops = entry.get("operations") or []
        name = ops[op] if isinstance(op, int) and 0 <= op < len(ops) else str(op)
        return str(entry.get("kind", kind)), str(name)

    def events(self) -> Iterator[Event]:
        records = self.tool.get("buffer_records") or {}
        for section in ("kernel_dispatch", "memory_copy", *_API_SECTIONS):
            for index, record in enumerate(records.get(section) or []):
                try:
                    yield self._event(section, record)
                except (TypeError, ValueError, KeyError, AttributeError) as e:
                    self.report.skip(f"{self.where}.buffer_records.{section}[{index}]: {e}")

    def _event(self, section: str, r: dict[str, Any]) -> Event:
        start, end = int(r["start_timestamp"]), int(r["end_timestamp"])
        if end < start:
            raise ValueError(f"ends before it starts ({start} > {end})")
        corr = (r.get("correlation_id") or {}).get("internal")
        if section == "kernel_dispatch":
            return self._kernel(r, start, end - start, corr)
        kind_name, op = self.op_name(r)
        if section == "memory_copy":
            device = self.agents.get((r.get("dst_agent_id") or {}).get("handle"))
            if "DEVICE_TO" in op:
                device = self.agents.get((r.get("src_agent_id") or {}).get("handle"))
            args = {"direction": op, "bytes": r.get("bytes")} if "bytes" in r else {"direction": op}
            return Event(
                kind=EventKind.MEMCPY,
                name=copy_name(op),
                start_ns=start,
                dur_ns=end - start,
                device=device,
                correlation=corr,
                args=args,
            )
        name = self.markers.get(corr, op) if section == "marker_api" else op
        extra: dict[str, Any] = {"domain": kind_name}
        if section == "rccl_api":
            extra["library"] = "rccl"
            mark_communication(name, extra, api=True)
        return Event(
            kind=api_kind(kind_name),
            name=name,
            start_ns=start,
            dur_ns=end - start,
            pid=self.pid,
            tid=r.get("thread_id"),
            correlation=corr,
            args=extra,
        )

    def _kernel(self, r: dict[str, Any], start: int, dur: int, corr: int | None) -> Event:
        info = r["dispatch_info"]
        symbol = self.symbols.get(info.get("kernel_id")) or {}
        name = str(symbol.get("formatted_kernel_name") or symbol.get("kernel_name") or "?")
        device = self.agents.get((info.get("agent_id") or {}).get("handle"))
        self.devices.see(device)
        queue = (info.get("queue_id") or {}).get("handle")
        grid, wg = info.get("grid_size") or {}, info.get("workgroup_size") or {}
        args = kernel_args(
            (int(grid.get("x", 0)), int(grid.get("y", 1)), int(grid.get("z", 1))),
            (int(wg.get("x", 0)), int(wg.get("y", 1)), int(wg.get("z", 1))),
            queue=queue,
            hip_stream=(r.get("stream_id") or {}).get("handle"),
            dispatch_id=info.get("dispatch_id"),
            kernel_id=info.get("kernel_id"),
            lds_bytes=info.get("group_segment_size"),
            scratch_bytes=info.get("private_segment_size"),
            arch_vgpr=symbol.get("arch_vgpr_count"),
            accum_vgpr=symbol.get("accum_vgpr_count"),
            sgpr=symbol.get("sgpr_count"),
        )
        mark_communication(name, args)
        return Event(
            kind=EventKind.KERNEL,
            name=name,
            start_ns=start,
            dur_ns=dur,
            device=device,
            stream=queue if isinstance(queue, int) else None,
            pid=self.pid,
            tid=r.get("thread_id"),
            correlation=corr,
            args=args,
        )


def _marker_messages(raw: object) -> dict[Any, str]:
    """roctx messages by correlation id (a ``{key, value}`` list or a plain mapping)."""
    if isinstance(raw, dict):
        return {_int_key(k): str(v) for k, v in raw.items()}
    if isinstance(raw, list):
        return {_int_key(e.get("key")): str(e.get("value")) for e in raw if isinstance(e, dict)}
    return {}


def _int_key(key: object) -> object:
    return int(key) if isinstance(key, str) and key.isdigit() else key
