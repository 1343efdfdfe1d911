"""The memory snapshot loader refuses every pickle that could run code, with a located error,
and never runs it; it also refuses damaged, wrongly shaped and oversized snapshots."""

from __future__ import annotations

import os
import pickle
import pickletools
from pathlib import Path
from typing import Any

import pytest

from ingest.detect import detect_trace_format
from ingest.errors import ParseError, UnsupportedFormatError
from ingest.events import TraceFormat
from ingest.memsnap import load_snapshot
from ingest.parsers import torch_memsnap
from ingest.parsers._safe_pickle import load_plain_pickle, scan_opcodes
from ingest.registry import parse_file

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "memsnap" / "h200_memsnap.pickle"


class _Exploit:
    """What an attacker pickles: unpickling it would call os.system."""

    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (self.command,))


def _snapshot(**extra: Any) -> dict[str, Any]:
    return {"segments": [], "device_traces": [[]], **extra}


def test_a_reduce_exploit_is_refused_and_never_runs(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    evil = pickle.dumps(_snapshot(x=_Exploit(f"touch {marker}")), protocol=4)
    with pytest.raises(ParseError) as caught:
        load_snapshot(evil, source="evil.pickle")
    message = str(caught.value)
    assert "STACK_GLOBAL" in message and "evil.pickle" in message
    offset = caught.value.offset
    assert offset is not None
    op = next(o for o, _, pos in pickletools.genops(evil) if pos == offset)
    assert op.name == "STACK_GLOBAL"
    assert not marker.exists()


def _op(name: str) -> bytes:
    return pickletools.code2op[name].code.encode("latin-1") if name in pickletools.code2op else b""


# Hand-written pickles, one per forbidden opcode (protocol 0/2 text where the opcode needs it).
HOSTILE = {
    "GLOBAL": b"\x80\x02cos\nsystem\n(S'true'\ntR.",
    "STACK_GLOBAL": b"\x80\x04\x8c\x02os\x8c\x06system\x93.",
    "INST": b"\x80\x02(S'true'\nios\nsystem\n.",
    "REDUCE": b"\x80\x02}(X\x01\x00\x00\x00a]tR.",
    "BUILD": b"\x80\x02}}b.",
    "BINPERSID": b"\x80\x02K\x01Q.",
    "PERSID": b"\x80\x02P1\n.",
    "OBJ": b"\x80\x02(]o.",
    "NEWOBJ": b"\x80\x02])\x81.",
    "EXT1": b"\x80\x02\x82\x01.",
}


@pytest.mark.parametrize("opcode", sorted(HOSTILE))
def test_each_forbidden_opcode_is_refused_with_its_offset(opcode: str) -> None:
    data = HOSTILE[opcode]
    with pytest.raises(ParseError) as caught:
        load_plain_pickle(data, source="h.pickle")
    assert f"refused pickle opcode {opcode}" in str(caught.value)
    expected = next(pos for op, _, pos in pickletools.genops(data) if op.name == opcode)
    assert caught.value.offset == expected


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b"", "not a pickle"),
        (b'{"segments": []}', "not a pickle"),
        (pickle.dumps(_snapshot(), protocol=4)[:-7], "not a readable pickle"),
        (pickle.dumps(_snapshot(), protocol=4) + b"junk", "bytes follow"),
        (b"\x80\x04\xff.", "not a readable pickle"),
        (b"\x80\x04\x8e" + (1 << 62).to_bytes(8, "little") + b"x.", "not a readable pickle"),
        (b"\x80\x04\x8d" + (1 << 40).to_bytes(8, "little") + b"x.", "not a readable pickle"),
    ],
    ids=["empty", "json", "truncated", "trailing", "unknown-opcode", "huge-bytes", "huge-str"],
)
def test_damaged_bytes_are_refused(data: bytes, words: str) -> None:
    with pytest.raises(ParseError, match=words):
        load_snapshot(data, source="bad.pickle")


@pytest.mark.parametrize(
    ("doc", "where", "words"),
    [
        ([1, 2], "snapshot", "expected a dict, found list"),
        ({"device_traces": []}, "snapshot", "no 'segments'"),
        ({"segments": {"a": 1}}, "segments", "expected a list, found dict"),
        (
            {"segments": [{"device": 0, "address": 0, "total_size": 1, "blocks": [{"size": "x"}]}]},
            "segments[0].blocks[0].size",
            "expected an integer, found str",
        ),
        (
            {"segments": [], "device_traces": [[{"action": "alloc", "addr": 1.5}]]},
            "device_traces[0][0].addr",
            "expected an integer, found float",
        ),
        (
            {"segments": [], "external_annotations": [{"stage": "START", "name": 3}]},
            "external_annotations[0].name",
            "expected a string",
        ),
    ],
    ids=["list", "no-segments", "segments-dict", "block-size", "entry-addr", "annotation"],
)
def test_wrong_structure_names_the_path(doc: Any, where: str, words: str) -> None:
    with pytest.raises(ParseError) as caught:
        load_snapshot(pickle.dumps(doc, protocol=4), source="s.pickle")
    assert caught.value.location == where
    assert words in str(caught.value)


def test_a_memo_bomb_is_bounded() -> None:
    """Shared references make a tiny pickle that is huge when walked: refused by count."""
    layer: list[Any] = [{"action": "alloc", "addr": 1, "size": 1}] * 1000
    bomb = {"segments": [], "device_traces": [layer] * 1000}  # 10^6 entries, one object
    data = pickle.dumps(bomb, protocol=4)
    assert len(data) < 50_000
    with pytest.raises(ParseError, match="too many entries"):
        load_snapshot(data, source="bomb.pickle", max_items=100_000)


def test_deep_nesting_loads_without_recursion_and_is_refused_by_shape() -> None:
    depth = 200_000  # pickle.dumps itself would recurse; written by hand
    data = b"\x80\x04}\x8c\x08segments" + b"]" * depth + b"a" * (depth - 1) + b"s."
    with pytest.raises(ParseError, match="expected a dict, found list"):
        load_snapshot(data, source="deep.pickle")


def test_the_locating_walk_is_bounded() -> None:
    data = pickle.dumps(_snapshot(), protocol=4)
    with pytest.raises(ParseError, match="more than 3 opcodes"):
        scan_opcodes(data, source="s.pickle", max_opcodes=3)


def test_detection_by_content(tmp_path: Path) -> None:
    renamed = tmp_path / "trace.json"
    renamed.write_bytes(FIXTURE.read_bytes())
    assert detect_trace_format(renamed) is TraceFormat.TORCH_MEMORY_SNAPSHOT
    other = tmp_path / "model.pickle"
    other.write_bytes(pickle.dumps({"weights": [1, 2, 3]}, protocol=4))
    with pytest.raises(UnsupportedFormatError, match=r"not a torch\.cuda\.memory snapshot"):
        detect_trace_format(other)


def test_a_snapshot_over_its_size_cap_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch_memsnap, "MAX_SNAPSHOT_BYTES", 10_000)
    with pytest.raises(ParseError, match="larger than 10000 bytes"):
        parse_file(FIXTURE)
