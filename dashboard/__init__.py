"""The perfdash dashboard: Dash pages that read everything from the HTTP API.

Public surface: `create_dash_app` (in `dashboard.app`).
"""

__all__: list[str] = []
