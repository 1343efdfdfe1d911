"""An xctrace export whose GPU rows never close costs O(log n) per row, not O(n).

The export is written here from the committed fixture's GPU table: its first row (which
defines the interned values), then 40,000 rows of distinct encoders that each last far
past every later start, so every span stays open to the end. Read in a fresh Python
(`tests/bounded.py`); when each row scanned every open span, 10k/20k/40k such rows took
2.7/8.6/33 s.
"""

from __future__ import annotations

from tests.bounded import measure

ROWS = 40_000
READ = """
import pathlib, tempfile
fixture = pathlib.Path("tests/data/xctrace/metal_system_trace.xml").read_text()
at = fixture.index('<schema name="metal-gpu-intervals"')
end = fixture.index("</row>", fixture.index("<row>", at)) + len("</row>")
row = (
    '<row><start-time fmt="t">{start}</start-time><duration fmt="d">{dur}</duration>'
    '<gpu-channel-name ref="3"/><gpu-frame-number ref="4"/><duration ref="5"/>'
    '<metal-nesting-level ref="6"/><formatted-label ref="7"/><gpu-state ref="10"/>'
    '<connection-uuid64 ref="11"/><render-buffer-depth ref="12"/><process ref="8"/>'
    '<metal-device-name ref="13"/><sentinel/><sentinel/><size-in-bytes ref="14"/>'
    '<metal-command-buffer-id ref="15"/><metal-command-buffer-id fmt="e">{encoder}'
    '</metal-command-buffer-id><uint64 ref="17"/></row>'
)
rows = "\\n".join(
    row.format(start=20_000_000 + i, dur=10**12, encoder=10**9 + i) for i in range(ROWS)
)
path = pathlib.Path(tempfile.mkdtemp()) / "open_spans.xml"
path.write_text(fixture[:end] + "\\n" + rows + "\\n</node>\\n</trace-query-result>\\n")
del fixture, rows
from ingest.events import EventKind
from ingest.registry import parse_file
with parse_file(path) as parsed:
    spans = [e for e in parsed.events if e.kind is EventKind.KERNEL]
print("KERNELS", len(spans), "ROWS", sum(e.args["rows"] for e in spans))
print("LONGEST", max(e.dur_ns for e in spans))
path.unlink()
path.parent.rmdir()
"""


def test_rows_that_never_close_cost_little_each() -> None:
    cost = measure(f"ROWS = {ROWS}\n" + READ, timeout_s=180)
    assert cost.finished, cost.output
    # The fixture's first row and each generated row: distinct encoders, one kernel each.
    assert f"KERNELS {ROWS + 1} ROWS {ROWS + 1}" in cost.output, cost.output
    assert f"LONGEST {10**12}" in cost.output, cost.output
    assert cost.within(peak_mb=400, cpu_s=12), (cost.peak_bytes, cost.cpu_s)
