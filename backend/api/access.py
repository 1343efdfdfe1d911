"""Route dependencies for who may call what: the caller the gate resolved, and `require`.

Public surface: `current_identity`, `IdentityDep`, `require`, `approve_any_ref`.
"""

from collections.abc import Callable
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPBearer

from backend.api.deps import SettingsDep
from backend.services.auth import RUN_ANY_REF, Identity, Permission, authorize

# Only declares the scheme in the OpenAPI schema (the docs' Authorize button): the gate
# (`backend.api.auth_gate`) has already read the header.
_bearer = HTTPBearer(auto_error=False, description="A perfdash API token (pd_...).")


def current_identity(request: Request) -> Identity | None:
    """Who the gate resolved for this request; None when anonymous (AUTH=off)."""
    identity = getattr(request.state, "identity", None)
    assert identity is None or isinstance(identity, Identity)
    return identity


IdentityDep = Annotated[Identity | None, Depends(current_identity)]


def require(permission: Permission) -> Callable[..., Identity | None]:
    """A dependency that lets the request through only if its caller has `permission`
    (401 or 403 otherwise, through the ServiceError handler)."""

    def dependency(
        identity: IdentityDep, settings: SettingsDep, _scheme: Annotated[object, Depends(_bearer)]
    ) -> Identity | None:
        authorize(identity, permission, settings.auth)
        return identity

    return dependency


def approve_any_ref(identity: Identity | None, auth: str) -> str:
    """Who lets a run or a bisect use refs off the spec's allowed branches: an admin
    (401 or 403 otherwise), named as the run records it."""
    authorize(identity, RUN_ANY_REF, auth)
    assert identity is not None  # RUN_ANY_REF is never anonymous
    return identity.label
