"""Counter tracks (`/timeline/counters`): allocator totals against the raw file's own
`[memory]` samples, GPU utilisation against the overview and against the raw GPU work."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.factories import Ingest
from tests.timeline.conftest import H200, H200_SMALL, SYNTHETIC
from tests.timeline.raw_chrome import GPU_WORK, RawEvent, raw_events, read_doc

TOTALS = {"memory_allocated": "Total Allocated", "memory_reserved": "Total Reserved"}


def _counters(client: TestClient, trace_id: str, **params: Any) -> dict[str, Any]:
    response = client.get(f"/api/v1/traces/{trace_id}/timeline/counters", params=params)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def _expected_memory(samples: list[RawEvent], total: str, ws: int, we: int, bins: int) -> list[Any]:
    """Per bin: the highest total sampled in it, else the last one before it, else None."""
    ordered = sorted(samples, key=lambda e: (e.start_ns, e.index))
    at = [((e.start_ns - ws) * bins // (we - ws), e.args[total]) for e in ordered]
    values: list[Any] = []
    for i in range(bins):
        inside = [value for b, value in at if b == i]
        before = [value for b, value in at if b < i]
        values.append(float(max(inside)) if inside else float(before[-1]) if before else None)
    return values


def test_memory_tracks_are_the_raw_samples(client: TestClient, ingest: Ingest) -> None:
    doc = read_doc(H200_SMALL)
    memory = [e for e in raw_events(doc, frozenset({"i"})) if e.name == "[memory]"]
    gpu = [e for e in memory if e.args["Device Type"] != 0 and e.args["Device Id"] >= 0]
    assert 0 < len(gpu) < len(memory)  # host samples are there, and left out
    trace_id = ingest(H200_SMALL)
    first, last = min(e.start_ns for e in gpu), max(e.start_ns for e in gpu)
    # Before the first sample (None), through the samples, and past the last (carried).
    for ws, we, bins in [
        (first - 1_000_000, last + 1_000_000, 97),
        (first + (last - first) // 3, first + (last - first) // 2, 400),
        (last + 10, last + 1_000, 3),
    ]:
        body = _counters(client, trace_id, start_ns=ws, end_ns=we, bins=bins)
        tracks = {t["kind"]: t for t in body["tracks"]}
        assert set(tracks) == {"gpu_utilization", *TOTALS}
        for kind, total in TOTALS.items():
            track = tracks[kind]
            assert (track["rank"], track["device"], track["unit"]) == (None, 0, "bytes")
            assert track["values"] == _expected_memory(gpu, total, ws, we, bins), kind
    assert (
        _counters(client, trace_id, start_ns=first - 1_000_000, end_ns=first - 1, bins=4)["tracks"][
            1
        ]["values"]
        == [None] * 4
    )


def test_whole_trace_utilisation_is_the_overview(client: TestClient, ingest: Ingest) -> None:
    for path in (H200, SYNTHETIC):
        trace_id = ingest(path)
        overview = client.get(f"/api/v1/traces/{trace_id}/timeline/overview?bins=50").json()
        body = _counters(client, trace_id, bins=50)
        (util,) = [t for t in body["tracks"] if t["kind"] == "gpu_utilization"]
        assert (body["start_ns"], body["end_ns"]) == (
            overview["trace_start_ns"],
            overview["trace_end_ns"],
        )
        assert util["values"] == [b["utilization"] for b in overview["bins"]]
        assert util["unit"] == "fraction" and util["label"] == "GPU 0 · utilization"


def _busy_fraction(work: list[RawEvent], ws: int, we: int, bins: int) -> list[float]:
    """Share of each bin covered by the union of the GPU work intervals."""
    merged: list[list[int]] = []
    for e in sorted(work, key=lambda e: e.start_ns):
        if merged and e.start_ns <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e.end_ns)
        else:
            merged.append([e.start_ns, e.end_ns])
    width = (we - ws) / bins
    out = []
    for i in range(bins):
        lo, hi = ws + i * width, ws + (i + 1) * width
        out.append(sum(max(0.0, min(hi, e) - max(lo, s)) for s, e in merged) / width)
    return out


def test_window_utilisation_follows_the_raw_gpu_work(client: TestClient, ingest: Ingest) -> None:
    """Blocks spread their busy time evenly over their extent, so a bin is exact only up
    to the blocks its edges cut (here at most 2.5 points of utilisation)."""
    work = [e for e in raw_events(read_doc(SYNTHETIC)) if e.cat in GPU_WORK]
    trace_id = ingest(SYNTHETIC)
    t0, t1 = min(e.start_ns for e in work), max(e.end_ns for e in work)
    ws, we, bins = t0 + (t1 - t0) // 4, t0 + (t1 - t0) // 2, 20
    (util,) = _counters(client, trace_id, start_ns=ws, end_ns=we, bins=bins)["tracks"][:1]
    want = _busy_fraction(work, ws, we, bins)
    assert max(want) > 0.3
    errors = [abs(got - exact) for got, exact in zip(util["values"], want, strict=True)]
    assert max(errors) < 0.05


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"bins": 0}, "greater than or equal"),
        ({"bins": 5001}, "less than or equal"),
        ({"start_ns": 2**63}, "less than or equal"),
        ({"end_ns": -(2**64)}, "greater than or equal"),
        ({"start_ns": 10, "end_ns": 10}, "empty range"),
        ({"start_ns": 10, "end_ns": 9}, "empty range"),
    ],
)
def test_counters_refuse_bad_windows_and_bins(
    client: TestClient, ingest: Ingest, params: dict[str, Any], message: str
) -> None:
    trace_id = ingest(H200)
    response = client.get(f"/api/v1/traces/{trace_id}/timeline/counters", params=params)
    assert response.status_code == 422 and message in response.text, response.text


def test_counters_of_an_unknown_trace(client: TestClient) -> None:
    assert client.get("/api/v1/traces/nope/timeline/counters").status_code == 404


def test_the_widest_window_int64_allows(client: TestClient, ingest: Ingest) -> None:
    """Bounds at the ends of int64 are accepted and binned without overflow: the trace
    lies in one bin, whose memory is the highest total of the file."""
    trace_id = ingest(H200)
    edge = 2**63 - 1
    body = _counters(client, trace_id, start_ns=-edge, end_ns=edge, bins=2)
    memory = {t["kind"]: t["values"] for t in body["tracks"] if t["unit"] == "bytes"}
    samples = [e for e in raw_events(read_doc(H200), frozenset({"i"})) if e.name == "[memory]"]
    gpu = [e.args for e in samples if e.args["Device Type"] != 0]
    assert memory == {
        kind: [None, float(max(args[total] for args in gpu))] for kind, total in TOTALS.items()
    }
