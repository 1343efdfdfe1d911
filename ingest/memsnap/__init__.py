"""PyTorch memory snapshots (`torch.cuda.memory._dump_snapshot`): a safe load, a replay of
the allocator history, and the views the trace page's memory snapshot tab shows.

Public surface: `load_snapshot`, `build_views`, `Snapshot`, `VIEWS_VERSION`.
"""

from __future__ import annotations

from ingest.memsnap.snapshot import Snapshot, load_snapshot
from ingest.memsnap.views import VIEWS_VERSION, build_views

__all__ = ["VIEWS_VERSION", "Snapshot", "build_views", "load_snapshot"]
