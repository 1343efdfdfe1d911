"""One module per page; Dash imports them from `create_dash_app` (never at package import)."""

__all__: list[str] = []
