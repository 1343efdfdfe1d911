"""The one path metric points take into the database: CI pushes and benchmark runs.

`push_metrics` parses a document in any accepted format, stores its runs and points
idempotently in one transaction, evaluates the affected SLAs inline and commits; alerts
are queued after the commit. The HTTP route and the benchmark runner both call it.

Public surface: `push_metrics`, `PushResult`.
"""

from typing import Any

from sqlmodel import Session, SQLModel

from backend.models.slas import SlaVerdict


class PushResult(SQLModel):
    """What a push did: points stored, points already there, and each affected SLA's verdict."""

    format: str
    runs: list[int]
    stored: int
    duplicates: int
    verdicts: list[SlaVerdict]

    @property
    def breached(self) -> bool:
        """True when any SLA failed on this push."""
        return any(v.verdict == "fail" for v in self.verdicts)


def push_metrics(
    session: Session,
    doc: dict[str, Any] | list[Any],
    *,
    fmt: str | None = None,
    defaults: dict[str, str] | None = None,
) -> PushResult:
    """Store a metrics document and evaluate the SLAs it touches (commits the session).

    Args:
        session: an open session; it is committed (or rolled back on error) here.
        doc: the decoded JSON document (native, pytest-benchmark, Google Benchmark or
            github-action-benchmark).
        fmt: the format name, or None to detect it.
        defaults: values for run fields the format lacks (project, commit, branch, run_id,
            benchmark, url).

    Returns:
        The stored/duplicate counts and the SLA verdicts.

    Raises:
        MetricDocumentError: the document is invalid; nothing was stored.
    """
    raise NotImplementedError("being built in issue 8")
