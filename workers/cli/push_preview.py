"""`perfdash push --dry-run`: what a push would store, worked out on this machine.

The document goes through the same parser and checks as on the server
(`backend.services.metrics.formats.parse_document`), so a dry run refuses what the server
would refuse, with the same JSON paths, and shows the benchmark, metric and unit names
each point gets; nothing is sent and no server is needed.
"""

from __future__ import annotations

from typing import Any

from backend.services.metrics import ParsedPoint, ParsedPush, parse_document
from backend.services.series import summarize

HEAD = ("BENCHMARK", "METRIC", "UNIT", "DIRECTION", "VALUE", "N")


def preview_push(doc: Any, *, fmt: str | None, defaults: dict[str, str]) -> str:
    """The points `doc` would store, as a table under a one-line run summary.

    Raises:
        MetricDocumentError: with every problem and its JSON path, as the server answers.
    """
    return render_preview(parse_document(doc, fmt=fmt, defaults=defaults))


def _value(point: ParsedPoint) -> tuple[str, str]:
    """The headline value (the median of the samples when there are samples) and n."""
    if point.samples:
        return f"{summarize(point.samples)['p50']:.6g}", str(len(point.samples))
    if point.value is not None:
        return f"{point.value:.6g}", "1"
    return f"hash {(point.hash or '')[:16]}", "1"


def render_preview(push: ParsedPush) -> str:
    """A parsed push as text: run fields, then one row per point."""
    run = push.run_id or push.url or push.commit
    head = (
        f"{push.format}: {len(push.points)} point(s) for project {push.project!r}, "
        f"run {run!r} (dry run: nothing sent)"
    )
    rows = [HEAD]
    for p in push.points:
        rows.append((p.benchmark, p.metric, p.unit or "-", p.direction, *_value(p)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEAD))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return "\n".join([head, *lines])
