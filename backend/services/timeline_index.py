"""Timeline level-of-detail index, built inside the ingest transaction (owner: timeline, #7)."""

from sqlalchemy.engine import Connection


def build_timeline_index(conn: Connection, trace_id: str) -> None:
    """Precompute what the timeline API reads, after the trace's events are inserted."""
