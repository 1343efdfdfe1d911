"""One look for every chart: template, fonts, colours, margins and the empty state.

Public surface: `base_layout`, `empty_figure`, `escape_lines`, `plotly_text`, and the
constants below.
"""

from __future__ import annotations

import html
import textwrap

import plotly.graph_objects as go

TEMPLATE = "plotly_white"
ACCENT = "#3b5bdb"
FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif"
MONO = "ui-monospace, SFMono-Regular, Menlo, Consolas, 'DejaVu Sans Mono', monospace"
# Time categories, the same colour on every page (overview bar, compare, legend).
CATEGORY_COLORS = {
    "compute": "#3b5bdb",
    "communication": "#ae3ec9",
    "memcpy": "#f08c00",
    "memset": "#fab005",
    "idle": "#ced4da",
}
PRECISION_COLORS = {
    "fp64": "#862e9c",
    "fp32": "#1971c2",
    "tf32": "#0c8599",
    "bf16": "#2f9e44",
    "fp16": "#66a80f",
    "fp8": "#e8590c",
    "tensor": "#c2255c",
}
_HOVER_WIDTH = 90


def plotly_text(text: str) -> str:
    """`text` for a Plotly label, tick or hover: `<`, `>` and `&` escaped, since Plotly reads
    `<…>` as markup. Quotes stay as they are: they cannot open a tag once `<` is escaped, and
    Plotly does not decode `&quot;` (a kernel named `"x"` would show `&quot;x&quot;`).

    >>> plotly_text('"><svg onload=alert(1)> & co')
    '"&gt;&lt;svg onload=alert(1)&gt; &amp; co'
    """
    return html.escape(text, quote=False)


def escape_lines(text: str, width: int = _HOVER_WIDTH) -> str:
    """Plotly reads `<…>` as markup: escape it, and wrap so a long name fits a hover box."""
    lines = textwrap.wrap(
        text, width, drop_whitespace=False, break_long_words=True, break_on_hyphens=False
    )
    return "<br>".join(plotly_text(line) for line in lines)


def base_layout(fig: go.Figure, height: int, top: int = 10) -> None:
    """Template, font, transparent background and margins shared by every chart."""
    fig.update_layout(
        template=TEMPLATE,
        height=height,
        font={"family": FONT, "size": 13, "color": "#212529"},
        margin={"l": 10, "r": 30, "t": top, "b": 50},
        paper_bgcolor="rgba(0,0,0,0)",
        plot_bgcolor="rgba(0,0,0,0)",
        hoverlabel={"align": "left", "bgcolor": "white"},
    )


def empty_figure(message: str) -> go.Figure:
    """A blank chart that says why it is blank, instead of empty axes."""
    fig = go.Figure()
    base_layout(fig, 200)
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    fig.add_annotation(
        text=plotly_text(message),
        showarrow=False,
        xref="paper",
        yref="paper",
        x=0.5,
        y=0.5,
        font={"size": 15, "color": "#868e96"},
    )
    return fig
