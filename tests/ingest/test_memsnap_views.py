"""The memory snapshot views on the H200 fixture, checked against torch's own numbers
(`h200_memsnap.expected.json`, read from `torch.cuda.memory_stats` in the same process) and
against a reading of the pickle done here with `pickle` and arithmetic only."""

from __future__ import annotations

import json
import pickle
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from ingest.memsnap import build_views, load_snapshot

DATA = Path(__file__).resolve().parents[1] / "data" / "memsnap"
PICKLE = DATA / "h200_memsnap.pickle"


@pytest.fixture(scope="module")
def raw() -> Any:
    return pickle.loads(PICKLE.read_bytes())  # our own committed fixture: trusted here


@pytest.fixture(scope="module")
def expected() -> Any:
    return json.loads((DATA / "h200_memsnap.expected.json").read_text())


@pytest.fixture(scope="module")
def view() -> dict[str, Any]:
    views = build_views(load_snapshot(PICKLE.read_bytes(), source=PICKLE.name))
    assert [d["device"] for d in views["devices"]] == [0]
    device: dict[str, Any] = views["devices"][0]
    return device


def _rounded(n: int) -> int:
    return max(512, -(-n // 512) * 512)


def _replayed(raw: Any, size: Any) -> tuple[int, int, int]:
    """Allocated before the first entry, at its highest, and the entry index of the peak."""
    entries = raw["device_traces"][0]
    live = [b for s in raw["segments"] for b in s["blocks"] if b["state"] != "inactive"]
    level = sum(b["size" if size is _rounded else "requested_size"] for b in live)
    level -= sum(size(e["size"]) for e in entries if e["action"] == "alloc")
    level += sum(size(e["size"]) for e in entries if e["action"] == "free_completed")
    start, peak, at = level, level, -1
    for i, e in enumerate(entries):
        level += {"alloc": 1, "free_completed": -1}.get(e["action"], 0) * size(e["size"])
        if level > peak:
            peak, at = level, i
    return start, peak, at


def test_dump_totals_match_torch(view: dict[str, Any], expected: Any, raw: Any) -> None:
    stats = expected["stats"]
    dump = view["dump"]
    assert dump["reserved"] == expected["memory_reserved_at_dump"]
    assert dump["reserved"] == sum(s["total_size"] for s in raw["segments"])
    assert dump["allocated"] == expected["memory_allocated_at_dump"]
    assert dump["requested"] == stats["requested_bytes.all.current"]
    assert dump["segments"] == stats["segment.all.current"]
    assert dump["blocks"] == stats["active.all.current"]
    assert dump["free_split_bytes"] == stats["inactive_split_bytes.all.current"]
    inactive = [b["size"] for s in raw["segments"] for b in s["blocks"] if b["state"] == "inactive"]
    assert dump["free_bytes"] == sum(inactive)


def test_peak_replayed_from_the_trace_is_torchs_max(
    view: dict[str, Any], expected: Any, raw: Any
) -> None:
    """The history starts after the model was built (its weights predate it), so the level
    before the first entry is not 0; anchored on the dump, the replay still reaches
    torch's own peak: reset_peak_memory_stats ran after recording began."""
    start, peak, at = _replayed(raw, _rounded)
    assert start > 0 and view["start"]["allocated"] == start
    assert peak == expected["max_memory_allocated"] == view["peak"]["allocated"]
    assert view["peak"]["entry"] == at
    _, requested_peak, _ = _replayed(raw, lambda n: n)
    assert requested_peak == expected["stats"]["requested_bytes.all.peak"]
    assert view["peak"]["requested"] == requested_peak
    assert view["peak"]["max_reserved"] == expected["max_memory_reserved"]
    assert any("allocated before the first kept entry" in n for n in view["notes"])


def test_map_at_peak_holds_exactly_the_peak_bytes(view: dict[str, Any]) -> None:
    blocks = [b for s in view["segments_at_peak"] for b in s["blocks"]]
    allocated = sum(b["size"] for b in blocks if b["state"] == "allocated")
    assert allocated == view["peak"]["allocated"]
    reserved = sum(s["size"] for s in view["segments_at_peak"])
    assert reserved == view["peak"]["reserved"]
    for s in view["segments_at_peak"]:  # blocks tile each segment exactly
        assert sum(b["size"] for b in s["blocks"]) == s["size"]


def test_fragmentation_at_dump_is_the_inactive_blocks(
    view: dict[str, Any], raw: Any, expected: Any
) -> None:
    by_bucket: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for s in raw["segments"]:
        for b in s["blocks"]:
            if b["state"] == "inactive":
                row = by_bucket[1 << (b["size"].bit_length() - 1)]
                row[0] += b["size"]
                row[1] += 1
    got = {r["lo"]: [r["bytes"], r["holes"]] for r in view["fragmentation"]["dump"]}
    assert got == dict(by_bucket)
    split = sum(r["split_bytes"] for r in view["fragmentation"]["dump"])
    assert split == expected["stats"]["inactive_split_bytes.all.current"]


def test_top_stacks_sum_to_the_peak(view: dict[str, Any]) -> None:
    stacks = view["top_stacks"]
    assert stacks == sorted(stacks, key=lambda s: -s["bytes"])
    held = sum(b["size"] for s in view["segments_at_peak"] for b in s["blocks"]
               if b["state"] == "allocated")  # fmt: skip
    assert sum(s["bytes"] for s in stacks) == held  # fewer than TOP_STACKS stacks here
    frames = [f for s in stacks for f in view["stacks"][s["stack"]]]
    assert any("linear.py" in f and "forward" in f for f in frames)


def test_phases_from_annotations(view: dict[str, Any], raw: Any) -> None:
    notes = raw["external_annotations"]
    starts = [a for a in notes if a["stage"] == "START"]
    assert len(view["phases"]) == len(starts)
    names = {p["name"] for p in view["phases"]}
    assert {"train_step_0", "train_step_1", "forward", "backward", "optimizer"} <= names
    # the global peak lies in one train_step and its peak equals the global one
    top = max(view["phases"], key=lambda p: p["peak_allocated"])
    assert top["peak_allocated"] == view["peak"]["allocated"]
    assert top["start_us"] <= view["peak"]["time_us"] <= top["end_us"]
    # independent: the highest level of entries inside train_step_1
    step = next(p for p in view["phases"] if p["name"] == "train_step_1")
    entries = raw["device_traces"][0]
    start, _, _ = _replayed(raw, _rounded)
    level, best = start, None
    for e in entries:
        level += {"alloc": 1, "free_completed": -1}.get(e["action"], 0) * _rounded(e["size"])
        if step["start_us"] <= e["time_us"] <= step["end_us"]:
            best = level if best is None else max(best, level)
    assert step["peak_allocated"] == best


def test_series_covers_every_entry(view: dict[str, Any], raw: Any) -> None:
    entries = raw["device_traces"][0]
    assert view["entries"] == len(entries)
    assert view["series"]["entry"] == list(range(len(entries)))  # under MAX_POINTS: all kept
    assert max(view["series"]["allocated"]) == view["peak"]["allocated"]


def test_blocks_at_the_peak_carry_their_allocation_stack(view: dict[str, Any], raw: Any) -> None:
    """A free entry records where the free happened (zero_grad); a block live at the peak
    and freed later must still show where it was allocated: its alloc entry's frames."""
    entries = raw["device_traces"][0]
    alloc_frames: dict[int, list[str]] = {}  # address -> stack of its live allocation
    for e in entries[: view["peak"]["entry"] + 1]:
        if e["action"] == "alloc":
            alloc_frames[e["addr"]] = [
                f"{f['filename']}:{f['line']} {f['name']}" for f in e["frames"]
            ]
        elif e["action"] == "free_completed":
            alloc_frames.pop(e["addr"], None)
    for s in view["segments_at_peak"]:
        for b in s["blocks"]:
            addr = s["address"] + b["offset"]
            if b["state"] == "allocated" and addr in alloc_frames and alloc_frames[addr]:
                assert view["stacks"][b["stack"]] == alloc_frames[addr][:16]
    shown = [f for st in view["top_stacks"] for f in view["stacks"][st["stack"]]]
    assert not any(" zero_grad" in f for f in shown)  # nothing live at the peak was made there


def test_blocks_older_than_the_history_are_named_so(view: dict[str, Any], raw: Any) -> None:
    """The model's weights predate recording: at the peak they are the bytes allocated
    before the first entry (none of them is freed in this run)."""
    start, _, _ = _replayed(raw, _rounded)
    first_frame = {s["stack"]: view["stacks"][s["stack"]][0] for s in view["top_stacks"]}
    older = [
        s for s in view["top_stacks"] if first_frame[s["stack"]].startswith("(allocated before")
    ]
    assert [s["bytes"] for s in older] == [start]


def test_a_wrapped_ring_buffer_is_said_so(raw: Any, expected: Any) -> None:
    """Keep only the entries after the peak, as a small `max_entries` would: the level
    before the first kept entry is then torch's peak itself, and the page must say that the
    history does not reach it rather than show a lower "peak"."""
    _, _, at = _replayed(raw, _rounded)
    cut = dict(raw, device_traces=[raw["device_traces"][0][at + 1 :]])
    views = build_views(load_snapshot(pickle.dumps(cut, protocol=4), source="cut.pickle"))
    (device,) = views["devices"]
    assert device["start"]["allocated"] == expected["max_memory_allocated"]
    assert device["peak"]["entry"] is None
    assert any("does not reach the allocated peak" in n for n in device["notes"])


def test_devices_are_kept_apart() -> None:
    """Addresses repeat across devices: each device is replayed on its own segments and
    its own `device_traces[i]` (a hand-made two-GPU snapshot)."""
    mib = 1 << 20

    def segment(device: int, live: int) -> dict[str, Any]:
        blocks = [{"address": 0, "size": live, "requested_size": live, "state": "active_allocated"},
                  {"address": live, "size": 2 * mib - live, "state": "inactive"}]  # fmt: skip
        return {"device": device, "address": 0, "total_size": 2 * mib, "blocks": blocks}

    alloc = {"action": "alloc", "addr": 0, "stream": 0, "time_us": 1}
    doc = {
        "segments": [segment(0, mib), segment(1, 512 * 1024)],
        "device_traces": [[dict(alloc, size=mib)], [dict(alloc, size=512 * 1024)]],
    }
    views = build_views(load_snapshot(pickle.dumps(doc, protocol=4), source="two.pickle"))
    got = {d["device"]: (d["peak"]["allocated"], d["dump"]["free_bytes"]) for d in views["devices"]}
    assert got == {0: (mib, mib), 1: (512 * 1024, 2 * mib - 512 * 1024)}
