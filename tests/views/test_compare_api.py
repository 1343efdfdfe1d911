"""`/api/v1/compare` on two constructed traces whose answer is known by construction."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.factories import Ingest
from tests.views.kineto_builder import document, kernel, memory, step

FILL = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
    "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)"
)
ADD = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
    "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)"
)


def _before() -> bytes:
    """Two 10 ms steps; full demangled names (torch); peak 2 GB allocated."""
    events = [
        step(1, 0, 10_000),
        step(2, 10_000, 10_000),
        memory(1, 2_000_000_000, 2_500_000_000, 1),
    ]
    for s in (0, 10_000):
        events += [kernel(FILL, s + 100, 100), kernel(ADD, s + 300, 50),
                   kernel("gemm_old", s + 400, 300)]  # fmt: skip
    return document(events)


def _after() -> bytes:
    """Two 8 ms steps; short names (as nsys prints them); peak 1.5 GB allocated."""
    events = [step(1, 0, 8_000), step(2, 8_000, 8_000), memory(1, 1_500_000_000, 2_000_000_000, 1)]
    for s in (0, 8_000):
        events += [kernel("vectorized_elementwise_kernel", s + 100, 50),
                   kernel("vectorized_elementwise_kernel", s + 200, 50),
                   kernel("gemm_new", s + 300, 200)]  # fmt: skip
    return document(events)


def test_compare_json(client: TestClient, ingest: Ingest) -> None:
    a, b = ingest(_before(), "before.json"), ingest(_after(), "after.json")
    body = client.get("/api/v1/compare", params={"a": a, "b": b, "tokens_per_step": 4096}).json()
    metrics = {m["metric"]: m for m in body["metrics"]}
    assert (metrics["step_time_ns"]["a"], metrics["step_time_ns"]["b"]) == (10e6, 8e6)
    assert metrics["step_time_ns"]["delta_pct"] == -20.0
    assert metrics["throughput_tokens_per_s"]["a"] == 4096 / 0.010
    assert metrics["throughput_tokens_per_s"]["b"] == 4096 / 0.008
    assert (metrics["peak_memory_bytes"]["a"], metrics["peak_memory_bytes"]["b"]) == (2e9, 1.5e9)
    (matched,) = body["kernels"]
    assert (matched["key"], matched["count_a"], matched["count_b"]) == (
        "vectorized_elementwise_kernel",
        4,
        4,
    )
    assert (matched["total_ns_a"], matched["total_ns_b"]) == (300_000, 200_000)
    # Both traces have two steps: the row compares time per step.
    assert body["basis"] == "per_step" and (body["steps_a"], body["steps_b"]) == (2, 2)
    assert (matched["a"], matched["b"], matched["delta"]) == (150_000, 100_000, -50_000)
    assert matched["match"] == "name" and len(matched["names_a"]) == 2
    assert [(k["name"], k["total_ns_b"]) for k in body["new_kernels"]] == [("gemm_new", 400_000)]
    assert [(k["name"], k["total_ns_a"]) for k in body["gone_kernels"]] == [("gemm_old", 600_000)]


def test_compare_markdown(client: TestClient, ingest: Ingest) -> None:
    a, b = ingest(_before(), "before.json"), ingest(_after(), "after.json")
    params = {"a": a, "b": b, "tokens_per_step": 4096, "format": "markdown"}
    response = client.get("/api/v1/compare", params=params)
    assert response.headers["content-type"].startswith("text/markdown")
    lines = response.text.splitlines()
    assert lines[0] == "## Trace comparison: `before.json` → `after.json`"
    assert "- Step time: 10.0 ms → 8.00 ms (20.0% improvement)" in lines
    assert "- Throughput: 409,600 → 512,000 tokens/s (25.0% increase)" in lines
    assert "- Peak memory: 2.00 GB → 1.50 GB (25.0% reduction)" in lines
    assert any(line.startswith("- GPU idle: ") and line.endswith(" points)") for line in lines)
    assert (
        "| `vectorized_elementwise_kernel` | name without template arguments "
        "| 150 µs | 100 µs | -50.0 µs | -33.3% |" in lines
    )
    assert "- `gemm_new`: 2 launches, 400 µs in the trace (200 µs per step)" in lines
    assert "- `gemm_old`: 2 launches, 600 µs in the trace (300 µs per step)" in lines


def test_compare_unknown_trace_is_404(client: TestClient, ingest: Ingest) -> None:
    a = ingest(_before(), "before.json")
    response = client.get("/api/v1/compare", params={"a": a, "b": "missing"})
    assert response.status_code == 404 and "missing" in response.json()["detail"]
    assert client.get("/api/v1/compare", params={"a": a}).status_code == 422
