"""The traces the timeline tests ingest (through the `ingest` fixture, on SQLite and PostgreSQL)."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
H200 = REPO / "tests" / "data" / "torch" / "h200_train_step.pt.trace.json.gz"
H200_SMALL = REPO / "tests" / "data" / "torch" / "h200_gpt_small.pt.trace.json.gz"
SYNTHETIC = REPO / "backend" / "sample_data" / "synthetic_train_8gpu_rank0.pt.trace.json.gz"
