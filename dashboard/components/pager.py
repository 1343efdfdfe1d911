"""Page buttons for a table the server pages (first, previous, "Page n of m", next, last).

A grid holds one server page at a time, so it cannot page itself; these buttons carry
the page they lead to in a pattern-matching id (`{"type": …, "role": …, "page": n}`) and a
page callback puts that page in the URL.

Public surface: `pager`, `PAGER_ROLES`.
"""

from __future__ import annotations

from dash import html

__all__ = ["PAGER_ROLES", "pager"]

# (role, symbol, what it does); the single angle quotes are escaped for ruff's RUF001.
PAGER_ROLES = (
    ("first", "«", "First page"),
    ("previous", "\u2039", "Previous page"),
    ("next", "\u203a", "Next page"),
    ("last", "»", "Last page"),
)


def _button(role: str, symbol: str, label: str, page: int, pages: int, id_type: str) -> html.Button:
    target = {"first": 0, "previous": page - 1, "next": page + 1, "last": pages - 1}[role]
    return html.Button(
        symbol,
        id={"type": id_type, "role": role, "page": target},
        title=label,
        disabled=target == page or not 0 <= target < pages,
        className="pager-button",
    )


def pager(page: int, pages: int, id_type: str) -> html.Nav | None:
    """Buttons to the other pages of `pages` (0-based `page`); None when there is one page."""
    if pages <= 1:
        return None
    first, previous, after, last = (
        _button(role, symbol, label, page, pages, id_type) for role, symbol, label in PAGER_ROLES
    )
    position = html.Span(f"Page {page + 1} of {pages}", className="pager-position")
    return html.Nav([first, previous, position, after, last], className="pager")
