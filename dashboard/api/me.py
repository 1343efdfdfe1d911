"""Who the API takes the browser's user to be, built on `ApiClient.get`.

Public surface: `get_me` and the `Me` it returns.
"""

from __future__ import annotations

from typing import TypedDict, cast

from dashboard.api.client import ApiClient

__all__ = ["Me", "get_me"]


class Me(TypedDict):
    auth: str
    kind: str | None
    name: str | None
    role: str | None
    scopes: list[str]
    csrf_token: str | None


def get_me(client: ApiClient) -> Me:
    """The signed-in user's name, role and CSRF token (or the auth mode when none is)."""
    return cast(Me, client.get("/me"))
