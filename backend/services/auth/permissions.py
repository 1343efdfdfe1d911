"""What each kind of caller may do: one table of permissions, one check.

A permission names the token scope that grants it (`admin` grants every scope, and any
token may read) and the least role a signed-in user needs (viewer < uploader < admin).
With `AUTH=off` nobody signs in, so the permissions that were anonymous before accounts
existed (reading, trace upload and delete, benchmark specs and runs) stay anonymous;
the rest always need a token.

Public surface: `Permission`, `authorize`, and the permissions `READ`, `UPLOAD_TRACE`,
`DELETE_TRACE`, `CHANGE_TRACE`, `RUN_BENCHMARK`, `CHANGE_BENCHMARK`, `CHANGE_RUNNER_CODE`,
`RUN_ANY_REF`, `PUSH_METRICS`, `CHANGE_SLAS`, `CHANGE_WEBHOOKS`, `READ_WEBHOOK_TARGETS`; `permits`.
"""

from dataclasses import dataclass

from backend.models.users import Role
from backend.services.auth.resolve import Identity
from backend.services.errors import ForbiddenError, NotAuthenticatedError


@dataclass(frozen=True)
class Permission:
    action: str  # what the caller tries to do, for messages
    scope: str | None  # token scope that grants it; None: any token
    role: Role | None  # least role of a signed-in user; None: API tokens only
    anonymous_when_off: bool  # allowed without credentials when AUTH=off


READ = Permission("read", None, Role.VIEWER, True)
UPLOAD_TRACE = Permission("upload a trace", "traces:write", Role.UPLOADER, True)
DELETE_TRACE = Permission("delete a trace", "traces:write", Role.ADMIN, True)
CHANGE_TRACE = Permission(
    "change a trace (name, tags, note, step marker)", "traces:write", Role.UPLOADER, True
)
RUN_BENCHMARK = Permission("request a benchmark run", "bench:run", Role.UPLOADER, True)
CHANGE_BENCHMARK = Permission("change a benchmark spec", "benchmarks:write", Role.ADMIN, True)
# Callable and command specs and install hooks run what they name on the GPU runners.
CHANGE_RUNNER_CODE = Permission(
    "store a callable or command spec or an install hook", "admin", Role.ADMIN, False
)
# A ref off a spec's allowed branches (a pull request, a fork's commit) is code nobody
# with the spec's trust chose: an admin says so, and the run records who.
RUN_ANY_REF = Permission("run a ref off the spec's allowed branches", "admin", Role.ADMIN, False)
PUSH_METRICS = Permission("push metrics", "metrics:write", None, False)
CHANGE_SLAS = Permission("change SLAs", "slas:write", Role.ADMIN, False)
CHANGE_WEBHOOKS = Permission("change webhooks", "webhooks:write", Role.ADMIN, False)
# Webhook URLs are secrets (Slack's carries its token) and the delivery log shows which
# internal ports answer: only those who may change webhooks see them.
READ_WEBHOOK_TARGETS = Permission(
    "read webhook URLs and deliveries", "webhooks:write", Role.ADMIN, False
)


def authorize(identity: Identity | None, permission: Permission, auth: str) -> None:
    """Return if `identity` may do it under the AUTH mode `auth`, else raise.

    Raises:
        NotAuthenticatedError: no identity, and one is needed.
        ForbiddenError: the token lacks the scope, or the user the role.
    """
    if identity is None:
        if auth == "off" and permission.anonymous_when_off:
            return
        if permission.role is None or auth == "off":
            raise NotAuthenticatedError(
                f"to {permission.action} an API token is required: Authorization: Bearer <token>"
            )
        raise NotAuthenticatedError(f"to {permission.action} sign in at /login or use an API token")
    if identity.role is None:  # an API token
        if permission.scope is None or {permission.scope, "admin"} & set(identity.scopes):
            return
        raise ForbiddenError(f"{identity.label} lacks the {permission.scope!r} scope")
    if permission.role is None:
        raise ForbiddenError(f"to {permission.action} use an API token with {permission.scope!r}")
    if identity.role.rank < permission.role.rank:
        raise ForbiddenError(
            f"to {permission.action} the {permission.role} role is needed; "
            f"{identity.label} is a {identity.role}"
        )


def permits(identity: Identity | None, permission: Permission, auth: str) -> bool:
    """Whether `authorize` would let `identity` do it (for what a response shows)."""
    try:
        authorize(identity, permission, auth)
    except (NotAuthenticatedError, ForbiddenError):
        return False
    return True
