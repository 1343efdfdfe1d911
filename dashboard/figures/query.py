"""A query result to a chart, when its shape says which: one label or time column and
numbers.

- exactly one text column and a number: a bar per row (the first 50), in the result's
  order;
- no text column, exactly one time column (a DuckDB DATE/TIME/TIMESTAMP, or a number
  named `*start_ns`, `ts` or `time`) and a number: a line over time.

The number drawn is the one the rows are sorted by, when one is (the usual
`ORDER BY total DESC`), else the first. Id columns (`id`, `*_id`) are never drawn. A
number named in ns as the views' are (`dur_ns`, `sum(dur_ns)`, `total_ns`) is drawn in
the unit of its largest bar, and hovers as every page writes a duration.

Public surface: `chart_columns`, `query_figure`, `is_ns_column`, `is_bytes_column`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import pairwise
from typing import Any

import plotly.graph_objects as go

from dashboard.figures.theme import ACCENT, base_layout, escape_lines, plotly_text
from dashboard.format import duration_unit, format_duration_ns

__all__ = ["chart_columns", "is_bytes_column", "is_ns_column", "query_figure"]

MAX_BARS = 50
LABEL_CHARS = 60
_NUMERIC = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
            "UINTEGER", "UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE", "DECIMAL")  # fmt: skip
_TIME_TYPES = ("DATE", "TIME", "TIMESTAMP")
_TIME_NAMES = ("ts", "time", "timestamp")
_NS_NAME = re.compile(r"\w_ns\b", re.IGNORECASE)
_BYTES_NAME = re.compile(r"(^|_|\()bytes\b", re.IGNORECASE)


def is_ns_column(name: str) -> bool:
    """A column named as a duration in ns, as the views name theirs.

    >>> [is_ns_column(n) for n in ("sum(dur_ns)", "total_ns", "ns", "count")]
    [True, True, False, False]
    """
    return bool(_NS_NAME.search(name))


def is_bytes_column(name: str) -> bool:
    """A column named as a size in bytes (`bytes`, `sum(bytes)`, `alloc_bytes`).

    >>> [is_bytes_column(n) for n in ("bytes", "sum(bytes)", "alloc_bytes", "kilobytes")]
    [True, True, True, False]
    """
    return bool(_BYTES_NAME.search(name))


def _numeric(kind: str) -> bool:
    return kind.split("(")[0] in _NUMERIC


def _time(name: str, kind: str) -> bool:
    if kind.startswith(_TIME_TYPES):
        return True
    return _numeric(kind) and (name.endswith("start_ns") or name.lower() in _TIME_NAMES)


def _is_id(name: str) -> bool:
    return name.lower() == "id" or name.lower().endswith("_id")


def _sorted_by(rows: Sequence[Sequence[Any]], column: int) -> bool:
    values = [r[column] for r in rows if r[column] is not None]
    if len(set(values)) < 2:
        return False
    pairs = list(pairwise(values))
    return all(a >= b for a, b in pairs) or all(a <= b for a, b in pairs)


def chart_columns(
    columns: Sequence[str], types: Sequence[str], rows: Sequence[Sequence[Any]] = ()
) -> tuple[int, int, bool] | None:
    """(x column, y column, is a time series), or None when the result has no chart.

    >>> chart_columns(["name", "count", "total_ns"], ["VARCHAR", "BIGINT", "HUGEINT"],
    ...               [["a", 1, 9], ["b", 5, 3], ["c", 2, 1]])
    (0, 2, False)
    >>> chart_columns(["start_ns", "value"], ["BIGINT", "DOUBLE"])
    (0, 1, True)
    >>> chart_columns(["kind", "name", "dur_ns"], ["VARCHAR", "VARCHAR", "BIGINT"]) is None
    True
    """
    named = list(zip(columns, types, strict=True))
    labels = [i for i, (_, t) in enumerate(named) if t == "VARCHAR"]
    times = [i for i, (c, t) in enumerate(named) if _time(c, t)]
    numbers = [
        i for i, (c, t) in enumerate(named) if _numeric(t) and i not in times and not _is_id(c)
    ]
    if len(labels) == 1 and numbers:
        x, is_time = labels[0], False
    elif not labels and len(times) == 1 and numbers:
        x, is_time = times[0], True
    else:
        return None
    y = next((i for i in numbers if not is_time and _sorted_by(rows, i)), numbers[0])
    return x, y, is_time


def query_figure(
    columns: Sequence[str], types: Sequence[str], rows: Sequence[Sequence[Any]]
) -> go.Figure | None:
    """A bar or line chart of the result, or None when it has no chartable shape."""
    picked = chart_columns(columns, types, rows)
    if picked is None or not rows:
        return None
    x, y, is_time = picked
    fig = go.Figure()
    if is_time:
        points = sorted((r[x], r[y]) for r in rows if r[x] is not None and r[y] is not None)
        fig.add_trace(
            go.Scatter(
                x=[p[0] for p in points], y=[p[1] for p in points], mode="lines",
                line={"color": ACCENT, "width": 1.5}, line_shape="hv",
            )
        )  # fmt: skip
        fig.update_layout(xaxis_title=plotly_text(columns[x]), yaxis_title=plotly_text(columns[y]))
        base_layout(fig, height=320)
        return fig
    shown = list(rows[:MAX_BARS])
    labels = [str(r[x]) for r in shown]
    values = [r[y] for r in shown]
    unit, scale, hover = "", 1.0, ["%{x}"] * len(shown)
    if is_ns_column(columns[y]):
        unit, scale = duration_unit(max((abs(v) for v in values if v is not None), default=0))
        hover = [format_duration_ns(v) for v in values]
    fig.add_trace(
        go.Bar(
            x=[None if v is None else v / scale for v in values],
            y=list(range(len(shown))),  # positions, so two rows with one label stay two bars
            orientation="h",
            marker_color=ACCENT,
            customdata=[[escape_lines(label), h] for label, h in zip(labels, hover, strict=True)],
            hovertemplate="%{customdata[0]}<br>%{customdata[1]}<extra></extra>",
        )
    )
    if unit:
        fig.update_xaxes(ticksuffix=f" {unit}")
    short = [
        plotly_text(t if len(t) <= LABEL_CHARS else t[: LABEL_CHARS - 1] + "…") for t in labels
    ]
    fig.update_yaxes(
        tickvals=list(range(len(shown))), ticktext=short, autorange="reversed", automargin=True
    )
    fig.update_layout(xaxis_title=plotly_text(columns[y]))
    base_layout(fig, height=max(220, 22 * len(shown) + 70))
    return fig
