"""An independent reading of an xctrace export, for the tests: ElementTree over the whole
document, ids resolved by a plain dictionary, columns found by mnemonic. No perfdash code."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

Rows = dict[str, list[dict[str, ET.Element]]]


def read_tables(path: Path) -> Rows:
    """Every table's rows as {mnemonic: element}, refs replaced by the element they name."""
    return read_document(path)[0]


def read_document(path: Path) -> tuple[Rows, dict[str, ET.Element]]:
    """The tables (as `read_tables`) and the document's elements by id."""
    root = ET.parse(path).getroot()
    ids = {e.get("id", ""): e for e in root.iter() if e.get("id") is not None}
    tables: dict[str, list[dict[str, ET.Element]]] = defaultdict(list)
    for node in root.iter("node"):
        schema = node.find("schema")
        assert schema is not None
        names = [c.findtext("mnemonic") or "" for c in schema.findall("col")]
        for row in node.findall("row"):
            cells = [ids[c.get("ref")] if c.get("ref") else c for c in row]
            tables[schema.get("name", "")].append(dict(zip(names, cells, strict=True)))
    return tables, ids


def number(cell: ET.Element) -> int:
    return int(cell.text or "")


def child(cell: ET.Element, tag: str, ids: dict[str, ET.Element]) -> ET.Element:
    """`cell`'s child `tag`, following a ref."""
    found = cell.find(tag)
    assert found is not None, (cell.tag, tag)
    ref = found.get("ref")
    return ids[ref] if ref is not None else found


def gpu_spans(path: Path) -> list[tuple[str, str, int, int, int]]:
    """GPU work per encoder: (name, channel, command buffer, start, end), the rows of one
    (command buffer, encoder, channel) that overlap merged into their union."""
    spans: dict[tuple[str, str, str, str], list[list[int]]] = defaultdict(list)
    names = {}
    for row in read_tables(path)["metal-gpu-intervals"]:
        encoder = row["encoder-id"]
        cb, channel = row["cmdbuffer-id"].text or "", row["channel-name"].text or ""
        key = (cb, encoder.text or "" if encoder.tag != "sentinel" else repr(row), channel,
               row["process"].get("fmt", ""))  # fmt: skip
        names[key] = label_name(row["event-label"])
        start = number(row["start"])
        spans[key].append([start, start + number(row["duration"])])
    out = []
    for key, rows in spans.items():
        rows.sort()
        merged = [rows[0]]
        for start, end in rows[1:]:
            if start <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        out += [(names[key], key[2], int(key[0]), s, e) for s, e in merged]
    return out


def kernel_totals(path: Path) -> dict[str, tuple[int, int]]:
    """(count, total ns) per GPU interval label, the process suffix cut off, one encoder's
    nested rows counted once, blits left out (they are copies)."""
    totals: dict[str, tuple[int, int]] = {}
    for name, channel, _, start, end in gpu_spans(path):
        if channel.startswith("Blit"):
            continue
        count, total = totals.get(name, (0, 0))
        totals[name] = (count + 1, total + end - start)
    return totals


def label_name(cell: ET.Element) -> str:
    """A GPU interval's label without its ``(process (pid)) 0x…`` tail."""
    return re.sub(r"\s+\(\s*\S+ \(\d+\)\s*\)\s+0x[0-9a-f]+$", "", cell.get("fmt", ""))
