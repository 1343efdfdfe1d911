"""Who is calling and what they may do: users, tokens, sessions, passwords, permissions, rate
limits.
"""

from backend.services.auth.permissions import (
    CHANGE_BENCHMARK,
    CHANGE_RUNNER_CODE,
    CHANGE_SLAS,
    CHANGE_TRACE,
    CHANGE_WEBHOOKS,
    DELETE_TRACE,
    PUSH_METRICS,
    READ,
    READ_WEBHOOK_TARGETS,
    RUN_ANY_REF,
    RUN_BENCHMARK,
    UPLOAD_TRACE,
    Permission,
    authorize,
    permits,
)
from backend.services.auth.resolve import (
    STATE_CHANGING,
    Credentials,
    Identity,
    Resolution,
    csrf_matches,
    resolve_credentials,
    sign_in,
)
from backend.services.auth.sessions import NewSession, find_session, revoke_session
from backend.services.auth.tokens import create_token, list_tokens, revoke_token
from backend.services.auth.users import add_user, disable_user, list_users, set_password, set_role

__all__ = [
    "CHANGE_BENCHMARK",
    "CHANGE_RUNNER_CODE",
    "CHANGE_SLAS",
    "CHANGE_TRACE",
    "CHANGE_WEBHOOKS",
    "DELETE_TRACE",
    "PUSH_METRICS",
    "READ",
    "READ_WEBHOOK_TARGETS",
    "RUN_ANY_REF",
    "RUN_BENCHMARK",
    "STATE_CHANGING",
    "UPLOAD_TRACE",
    "Credentials",
    "Identity",
    "NewSession",
    "Permission",
    "Resolution",
    "add_user",
    "authorize",
    "create_token",
    "csrf_matches",
    "disable_user",
    "find_session",
    "list_tokens",
    "list_users",
    "permits",
    "resolve_credentials",
    "revoke_session",
    "revoke_token",
    "set_password",
    "set_role",
    "sign_in",
]
