"""SLAs: definitions, pure rules and their evaluation, verdicts, baselines, the board, and the
alerts and webhooks their status changes send.
"""

from backend.services.slas.alerts import deliver, record_changes, record_event
from backend.services.slas.baselines import accept_baseline, list_acceptances
from backend.services.slas.board import add_series_slas, latest_evaluations, read_board
from backend.services.slas.definitions import (
    ApplyResult,
    apply_slas,
    create_sla,
    delete_sla,
    get_sla,
    list_slas,
    replace_sla,
)
from backend.services.slas.evaluate import affected_slas, evaluate_run
from backend.services.slas.verdicts import stored_verdicts
from backend.services.slas.webhook_targets import redact_url
from backend.services.slas.webhooks import (
    create_webhook,
    delete_webhook,
    list_deliveries,
    list_webhooks,
)

__all__ = [
    "ApplyResult",
    "accept_baseline",
    "add_series_slas",
    "affected_slas",
    "apply_slas",
    "create_sla",
    "create_webhook",
    "delete_sla",
    "delete_webhook",
    "deliver",
    "evaluate_run",
    "get_sla",
    "latest_evaluations",
    "list_acceptances",
    "list_deliveries",
    "list_slas",
    "list_webhooks",
    "read_board",
    "record_changes",
    "record_event",
    "redact_url",
    "replace_sla",
    "stored_verdicts",
]
