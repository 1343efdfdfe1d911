"""An xctrace export through the API: upload → ready, the kernel top-10, the timeline's lanes
and its launch flows, each checked against an ElementTree reading of the file."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from fastapi.testclient import TestClient

from tests.factories import Ingest
from tests.ingest.xctrace_reading import gpu_spans, kernel_totals, number, read_tables
from tests.timeline.flow_pairs import chrome_doc, chrome_flows

TRACE = Path(__file__).resolve().parents[1] / "data" / "xctrace" / "metal_system_trace.xml"


def test_xctrace_views(client: TestClient, ingest: Ingest) -> None:
    trace_id = ingest(TRACE)
    trace = client.get(f"/api/v1/traces/{trace_id}").json()
    assert trace["status"] == "ready" and trace["format"] == "xctrace_xml"
    tables = read_tables(TRACE)
    spans = gpu_spans(TRACE)
    blits = sum(channel.startswith("Blit") for _, channel, *_ in spans)
    assert trace["event_counts"]["kernel"] == len(spans) - blits

    expected = sorted(kernel_totals(TRACE).items(), key=lambda kv: -kv[1][1])[:10]
    kernels = client.get(f"/api/v1/traces/{trace_id}/kernels").json()["items"][:10]
    assert [(k["name"], k["count"], k["total_ns"]) for k in kernels] == [
        (name, count, total) for name, (count, total) in expected
    ]

    labels = {
        lane["label"] for lane in client.get(f"/api/v1/traces/{trace_id}/timeline").json()["lanes"]
    }
    for channel in ("Vertex", "Fragment", "Compute", "Blit"):
        assert f"GPU 0 · {channel} channel" in labels, labels
    assert "pid 4242 · thread 18527671" in labels, labels

    # Each GPU interval of the app flows from the commit of its command buffer.
    commits = {
        number(r["cmdbuffer-id"]): number(r["start"])
        for r in tables["metal-application-command-buffer-submissions"]
    }
    expected_pairs = Counter((commits[cb], start) for _, _, cb, start, _ in spans if cb in commits)
    raw = client.get(f"/api/v1/traces/{trace_id}/export.json").content
    pairs = chrome_flows(chrome_doc(raw)).pairs()
    assert Counter((s[2], f[2]) for (s, f), n in pairs.items() for _ in range(n)) == expected_pairs
