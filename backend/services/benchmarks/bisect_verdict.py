"""What a regression verdict says about the bisect it asked for, on its stored evaluation.

A regression pushed with a metric asks for a bisect; whether one starts is known only
later, when the runner has checked the commits on its mirror. The answer goes into the
evaluation's `details["bisect"]` (`{"status": "checking"|"started"|"not_started",
"id"?, "reason"?}`), so the SLA's verdict history says why no bisect started.

Public surface: `note_verdict`.
"""

from typing import Any

from sqlmodel import Session, col, select

from backend.models.slas import SlaEvaluation


def note_verdict(session: Session, sla_id: str, commit: str, note: dict[str, Any]) -> None:
    """Set `details["bisect"]` on the newest evaluation of the SLA at `commit` (the
    caller commits); nothing when there is none."""
    evaluation = session.exec(
        select(SlaEvaluation)
        .where(SlaEvaluation.sla_id == sla_id, SlaEvaluation.commit == commit)
        .order_by(col(SlaEvaluation.created_at).desc(), col(SlaEvaluation.id).desc())
    ).first()
    if evaluation is not None:
        evaluation.details = {**evaluation.details, "bisect": note}  # a new dict: JSON change
        session.add(evaluation)
