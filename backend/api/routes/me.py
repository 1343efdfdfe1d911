"""`/api/v1/me`: who the API takes the caller to be, for the navbar and for scripts."""

from fastapi import APIRouter

from backend.api.access import IdentityDep
from backend.api.deps import SettingsDep
from backend.models.users import UserPublic

router = APIRouter(tags=["auth"])


@router.get("/me")
def me(identity: IdentityDep, settings: SettingsDep) -> UserPublic:
    """The signed-in user (name, role, the session's CSRF token) or the token (name,
    scopes); only `auth` when anonymous (AUTH=off)."""
    if identity is None:
        return UserPublic(auth=settings.auth)
    return UserPublic(
        auth=settings.auth,
        kind="user" if identity.is_user else "token",
        name=identity.name,
        role=identity.role,
        scopes=list(identity.scopes),
        csrf_token=identity.csrf_token,
    )
