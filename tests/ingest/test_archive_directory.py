"""A zip whose central directory holds many tiny entries is refused by its end record,
before `zipfile` parses the directory into memory.

Each archive is written here: one real member, then a central directory of a million
entries of 47 bytes (47 MB, written in pieces and removed after), with an end record
that tells the truth, one that lies about the count (only the size gives it away), and a
zip64 one. Read in a fresh Python (`tests/bounded.py`); before the end record was read,
zipfile built every entry first (these took 476 MB and 5 s CPU).
"""

from __future__ import annotations

import textwrap
import zipfile
from pathlib import Path

import pytest

from ingest.archive import extracted
from tests.bounded import measure

WRITE = """
import io, pathlib, struct, tempfile, zipfile
buf = io.BytesIO()
with zipfile.ZipFile(buf, "w") as z:
    z.writestr("a", b"")
local = buf.getvalue()[: buf.getvalue().index(b"PK\\x01\\x02")]
entry = struct.pack(
    "<4s4B4HL2L5H2L", b"PK\\x01\\x02", 20, 3, 20, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0,
    0o100644 << 16, 0,
) + b"a"
n = 1_000_000
size = len(entry) * n
def eocd(entries, size, offset):
    return struct.pack("<4s4H2LH", b"PK\\x05\\x06", 0, 0, entries, entries, size, offset, 0)
def zip64(entries, size, at, offset):
    record = struct.pack(
        "<4sQ2H2L4Q", b"PK\\x06\\x06", 44, 45, 45, 0, 0, entries, entries, size, offset
    )
    locator = struct.pack("<4sLQL", b"PK\\x06\\x07", 0, at, 1)
    return record + locator + eocd(0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF)
"""
ENDS = {
    "count": "end = eocd(0xFFFF, size, len(local))",
    "size, count lying": "end = eocd(1, size, len(local))",
    "zip64": "end = zip64(n, size, len(local) + size, len(local))",
}
EXTRACT = """
path = pathlib.Path(tempfile.mkdtemp()) / "many.zip"
with path.open("wb") as f:
    f.write(local)
    for _ in range(n // 1000):
        f.write(entry * 1000)
    f.write(end)
from ingest.archive import extracted
from ingest.errors import ParseError
try:
    with extracted(path, source="many.zip", max_total_bytes=1 << 30, max_file_bytes=1 << 30,
                   max_files=4096) as members:
        print("ACCEPTED", len(members))
except ParseError as e:
    print("REFUSED", e)
finally:
    path.unlink()
    path.parent.rmdir()
"""
SAYS = {
    "count": "more than 4096 entries (its end record says 65535)",
    "size, count lying": "central directory is 47000000 bytes (its end record)",
    "zip64": "more than 4096 entries (its zip64 end record says 1000000)",
}


@pytest.mark.parametrize("end", list(ENDS))
def test_a_huge_central_directory_is_refused_by_its_end_record(end: str) -> None:
    code = textwrap.dedent(WRITE) + ENDS[end] + "\n" + textwrap.dedent(EXTRACT)
    cost = measure(code, timeout_s=120)
    assert cost.finished, cost.output
    assert "REFUSED" in cost.output and SAYS[end] in cost.output, cost.output
    assert "many.zip" in cost.output
    # zipfile's parse of these directories alone took 600 MB.
    assert cost.within(peak_mb=200, cpu_s=10), (cost.peak_bytes, cost.cpu_s)


def test_a_zip_at_the_limit_still_extracts(tmp_path: Path) -> None:
    """An ordinary zip of as many entries as allowed, with long names, passes the end
    record's check: every member comes out."""
    path = tmp_path / "ok.zip"
    names = [f"rank{i}/" + "n" * 150 + ".json" for i in range(4096)]
    with zipfile.ZipFile(path, "w") as z:
        for name in names:
            z.writestr(name, b"{}")
    with extracted(
        path, source="ok.zip", max_total_bytes=1 << 30, max_file_bytes=1 << 30, max_files=4096
    ) as members:
        assert [m.name for m in members] == names
