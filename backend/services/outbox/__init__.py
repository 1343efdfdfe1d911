"""The transactional outbox: task messages written as rows in the transaction they announce."""

from backend.services.outbox.messages import add_message, send_now, sweep_outbox

__all__ = [
    "add_message",
    "send_now",
    "sweep_outbox",
]
