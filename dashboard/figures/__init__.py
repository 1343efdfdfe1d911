"""Pure builders from API data to Plotly figures, unit-tested without a Dash server.

Public surface: `kernel_top_figure`.
"""

from __future__ import annotations

from dashboard.figures.kernels import kernel_top_figure

__all__ = ["kernel_top_figure"]
