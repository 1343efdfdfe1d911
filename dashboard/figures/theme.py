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
# Time categories, the same colour on every page: the Overview and Steps bars here, and
# the canvas timeline, which is handed this map (`pages/timeline.py`, data-palette) and
# shades each name within its category's colour (`assets/timeline/colors.js`). The
# timeline's own categories (copy directions, CPU work) are shades of these families.
CATEGORY_COLORS = {
    "compute": "#3b5bdb",
    "communication": "#ae3ec9",
    "memcpy": "#f08c00",
    "memcpy_htod": "#f08c00",
    "memcpy_dtoh": "#d9480f",
    "memcpy_dtod": "#e67700",
    "memcpy_ptop": "#c2410c",
    "memset": "#fab005",
    "idle": "#ced4da",
    "sync": "#e03131",
    "cpu_op": "#2f9e44",
    "runtime": "#1098ad",
    "python": "#9c6b3f",
    "annotation": "#a5b4c8",
    "other": "#868e96",
}
# What the timeline's legend names, in the order it lists them.
CATEGORY_LABELS = {
    "compute": "compute kernel",
    "communication": "communication (NCCL/RCCL)",
    "memcpy_htod": "memcpy H2D",
    "memcpy_dtoh": "memcpy D2H",
    "memcpy_dtod": "memcpy D2D",
    "memcpy_ptop": "memcpy P2P",
    "memset": "memset",
    "sync": "sync call",
    "cpu_op": "CPU op",
    "runtime": "CUDA runtime",
    "python": "Python",
    "annotation": "annotation",
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
