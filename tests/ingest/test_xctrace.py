"""xctrace (Instruments Metal System Trace) exports: what the parser reads, checked against
an ElementTree reading of the same file, and every way a file can be wrong or hostile."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from ingest.errors import IngestError, ParseError
from ingest.events import EventKind
from ingest.registry import parse_file
from tests.ingest.xctrace_reading import child, gpu_spans, kernel_totals, number, read_document

DATA = Path(__file__).resolve().parents[1] / "data" / "xctrace"
TRACE = DATA / "metal_system_trace.xml"
COLS = (
    "<col><mnemonic>start</mnemonic><engineering-type>start-time</engineering-type></col>"
    "<col><mnemonic>duration</mnemonic><engineering-type>duration</engineering-type></col>"
    "<col><mnemonic>channel-name</mnemonic><engineering-type>gpu-channel-name"
    "</engineering-type></col>"
    "<col><mnemonic>event-label</mnemonic><engineering-type>formatted-label"
    "</engineering-type></col>"
    "<col><mnemonic>process</mnemonic><engineering-type>process</engineering-type></col>"
    "<col><mnemonic>cmdbuffer-id</mnemonic><engineering-type>metal-command-buffer-id"
    "</engineering-type></col>"
)
ROW = (
    '<row><start-time id="1" fmt="00:00.001">1000</start-time><duration id="2">{dur}</duration>'
    '<gpu-channel-name id="3" fmt="Compute">Compute</gpu-channel-name>'
    '<formatted-label id="4" fmt="CB:k   (a (1)) 0x1"/>'
    '<process id="5" fmt="a (1)"><pid id="6" fmt="1">1</pid></process>'
    '<metal-command-buffer-id id="7" fmt="0x10">16</metal-command-buffer-id></row>'
)


def doc(rows: str, *, schema: str = "metal-gpu-intervals", cols: str = COLS) -> bytes:
    return (
        f'<?xml version="1.0"?>\n<trace-query-result><node xpath="//x">'
        f'<schema name="{schema}">{cols}</schema>\n{rows}\n</node></trace-query-result>\n'
    ).encode()


def read(tmp_path: Path, data: bytes, name: str = "t.xml") -> list[object]:
    path = tmp_path / name
    path.write_bytes(data)
    with parse_file(path) as parsed:
        return list(parsed.events)


def test_events_match_an_independent_reading() -> None:
    tables, ids = read_document(TRACE)
    with parse_file(TRACE) as parsed:
        events = list(parsed.events)
        header = parsed.header
    counts = Counter(e.kind for e in events)
    spans = gpu_spans(TRACE)
    assert len(spans) < len(tables["metal-gpu-intervals"])  # the fixture nests some rows
    blits = sum(channel.startswith("Blit") for _, channel, *_ in spans)
    assert counts[EventKind.KERNEL] == len(spans) - blits and counts[EventKind.MEMCPY] == blits
    assert counts[EventKind.CPU_OP] == len(tables["metal-application-encoders-list"])
    submissions = tables["metal-application-command-buffer-submissions"]
    assert counts[EventKind.RUNTIME] == len(submissions) + len(tables["metal-driver-intervals"])
    kernels: dict[str, tuple[int, int]] = {}
    for e in events:
        if e.kind is EventKind.KERNEL:
            c, t = kernels.get(e.name, (0, 0))
            kernels[e.name] = (c + 1, t + e.dur_ns)
    assert kernels == kernel_totals(TRACE)
    # Each commit sits on its thread, and every GPU interval of its command buffer shares
    # its correlation.
    commits = {
        number(r["cmdbuffer-id"]): (
            number(child(child(r["thread"], "process", ids), "pid", ids)),
            number(child(r["thread"], "tid", ids)),
            number(r["start"]),
        )
        for r in submissions
    }
    by_corr = {e.correlation: e for e in events if e.name == "MTLCommandBuffer commit"}
    assert {(e.pid, e.tid, e.start_ns) for e in by_corr.values()} == set(commits.values())
    linked = Counter(
        (by_corr[e.correlation].start_ns, e.start_ns)
        for e in events
        if e.kind in (EventKind.KERNEL, EventKind.MEMCPY) and e.correlation in by_corr
    )
    expected = Counter((commits[cb][2], start) for _, _, cb, start, _ in spans if cb in commits)
    assert linked == expected and len(expected) > 300
    assert header.devices[0].name == "Apple M3 Max"
    assert header.metadata["gpu_channels"] == {
        "1": "Vertex", "2": "Fragment", "3": "Compute", "4": "Blit",
    }  # fmt: skip


def test_an_archive_of_one_export_per_table_is_one_trace() -> None:
    with parse_file(DATA / "metal_tables.zip") as parsed:
        events = list(parsed.events)
        assert set(parsed.header.metadata["tables"]) == {
            "metal-gpu-intervals", "metal-application-command-buffer-submissions",
            "metal-application-encoders-list", "metal-driver-intervals",
        }  # fmt: skip
    # ids restart in each file; the command buffers still link across them.
    commits = {e.correlation for e in events if e.name == "MTLCommandBuffer commit"}
    gpu = [e for e in events if e.kind is EventKind.KERNEL and e.correlation in commits]
    assert len(commits) == 40 and len(gpu) >= 60


def test_refs_and_sentinels(tmp_path: Path) -> None:
    second = (
        '<row><start-time id="8">5000</start-time><duration ref="2"/><gpu-channel-name ref="3"/>'
        '<formatted-label ref="4"/><process ref="5"/><metal-command-buffer-id ref="7"/></row>'
    )
    events = read(tmp_path, doc(ROW.format(dur=700) + second))
    assert [(e.start_ns, e.dur_ns, e.name, e.correlation) for e in events] == [  # type: ignore[attr-defined]
        (1000, 700, "CB:k", 1), (5000, 700, "CB:k", 1),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (doc(ROW.format(dur=700))[:-60], "ends early"),
        (b"<trace-query-result><node>", "ends early"),
        (doc(ROW.format(dur=-5)), "'duration' is negative"),
        (doc(ROW.format(dur="12ms")), "'duration' is '12ms', not an integer"),
        (doc(ROW.format(dur=1).replace('<duration id="2">', '<duration ref="99">')
             .replace("1</duration>", "</duration>")), 'refers to id 99'),
        (doc("", schema="time-profile"), "'time-profile' is not one perfdash reads"),
        (doc(ROW.format(dur=1), cols=COLS.replace("cmdbuffer-id", "cb")), "no 'cmdbuffer-id'"),
        (doc(ROW.format(dur=1), cols=COLS.replace("e>duration<", "e>uint64<")),
         "column 'duration' is 'uint64'"),
        (doc(ROW.format(dur=1).replace("<sentinel/>", "").replace(
            '<gpu-channel-name id="3" fmt="Compute">Compute</gpu-channel-name>', "")),
         "has 5 cells for 6 columns"),
        (doc(ROW.format(dur=1).replace('<duration id="2">1</duration>', "<sentinel/>")),
         "'duration' is empty"),
        (doc(ROW.format(dur=1) + ROW.format(dur=2)), 'id "1" is defined twice'),
        (doc(ROW.format(dur=1).replace('fmt="00:00.001"', 'fmt="' + "x" * 70_000 + '"')),
         "attribute fmt of <start-time> is 70,000 characters"),
        (doc(ROW.format(dur=1).replace(">Compute<", ">" + "C" * 70_000 + "<")),
         "text is over 65,536 characters"),
        (b'<?xml version="1.0"?><!DOCTYPE trace-query-result [<!ENTITY a "aaaaaaaaaa">'
         b'<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]><trace-query-result>&b;'
         b"</trace-query-result>", "document type declaration"),
        (b'<?xml version="1.0"?><!DOCTYPE r SYSTEM "file:///etc/passwd"><trace-query-result/>',
         "document type declaration"),
        (b"<trace-query-result>" + b"<node>" * 40, "nest deeper than 32"),
        (b'<?xml version="1.0"?><trace-toc><run number="1"/></trace-toc>', "table of contents"),
        (b"<trace-query-result></trace-query-result>", "holds no table rows"),
        (b"<trace-query-result><node><row/></node></trace-query-result>", "before its node's"),
    ],
)  # fmt: skip
def test_bad_exports_fail_with_where(tmp_path: Path, data: bytes, message: str) -> None:
    with pytest.raises(ParseError, match=message.replace("(", r"\(").replace(")", r"\)")) as e:
        read(tmp_path, data)
    assert "t.xml" in str(e.value)


@pytest.mark.parametrize("data", [b"", b"   \n", b"hello", b"<html><body/></html>", b"\x00" * 64])
def test_not_an_export_is_refused(tmp_path: Path, data: bytes) -> None:
    with pytest.raises(IngestError):
        read(tmp_path, data)


def test_errors_give_the_line(tmp_path: Path) -> None:
    rows = "\n".join(ROW.format(dur=1).replace('id="', f'id="{i}') for i in range(1, 4))
    rows += "\n" + ROW.format(dur=-1).replace('id="', 'id="x')
    with pytest.raises(ParseError, match=r"metal-gpu-intervals row 4, line 6"):
        read(tmp_path, doc(rows))


def test_label_shapes_seen_in_public_exports(tmp_path: Path) -> None:
    """A label with a nested <string> (its text is the name) and a <process> defined inside
    it, then referenced by the process column; an id cell with its value only in `fmt`."""
    row = (
        '<row><start-time id="1">10</start-time><duration id="2">20</duration>'
        '<gpu-channel-name id="3" fmt="Compute">Compute</gpu-channel-name>'
        '<formatted-label id="4" fmt="CB 0:Compute Command 0 ( qwen (2297) )">'
        '<string id="5" fmt="CB 0:Compute Command 0">CB 0:Compute Command 0</string>'
        '<process id="6" fmt="qwen (2297)"><pid id="7" fmt="2297">2297</pid></process>'
        '</formatted-label><process ref="6"/>'
        '<metal-command-buffer-id id="8" fmt="0xaa"/></row>'
    )
    (event,) = read(tmp_path, doc(row))
    assert (event.name, event.args["process"], event.args["command_buffer"]) == (  # type: ignore[attr-defined]
        "CB 0:Compute Command 0", "qwen (2297)", "0xaa",
    )  # fmt: skip


def test_an_archive_ignores_other_files_and_refuses_a_table_twice(tmp_path: Path) -> None:
    import zipfile

    one = doc(ROW.format(dur=5))
    ok, twice = tmp_path / "ok.zip", tmp_path / "twice.zip"
    with zipfile.ZipFile(ok, "w") as z:
        z.writestr("gpu.xml", one)
        z.writestr("notes.txt", "recorded on an M3")
    with parse_file(ok) as parsed:
        assert len(list(parsed.events)) == 1
        assert any("notes.txt" in w for w in parsed.report.warnings)
    with zipfile.ZipFile(twice, "w") as z:
        z.writestr("a.xml", one)
        z.writestr("b.xml", one)
    with (
        pytest.raises(ParseError, match="metal-gpu-intervals appears twice"),
        parse_file(twice) as p,
    ):
        list(p.events)


def test_an_encoders_nested_rows_are_one_kernel(tmp_path: Path) -> None:
    """Rows of one encoder that overlap are its union (start of the first, the latest end);
    a later row of the same encoder that does not overlap is a second kernel."""
    cols = COLS + (
        "<col><mnemonic>encoder-id</mnemonic><engineering-type>metal-command-buffer-id"
        "</engineering-type></col>"
    )
    first = ROW.format(dur=1000).replace("</row>", '<metal-command-buffer-id id="9">17'
                                         "</metal-command-buffer-id></row>")  # fmt: skip
    nested = (
        '<row><start-time id="10">1400</start-time><duration id="11">600</duration>'
        '<gpu-channel-name ref="3"/><formatted-label ref="4"/><process ref="5"/>'
        '<metal-command-buffer-id ref="7"/><metal-command-buffer-id ref="9"/></row>'
    )
    later = nested.replace('id="10">1400', 'id="12">9000').replace('id="11"', 'id="13"')
    events = read(tmp_path, doc(first + nested + later, cols=cols))
    spans = sorted((e.start_ns, e.dur_ns, e.args["rows"]) for e in events)  # type: ignore[attr-defined]
    assert spans == [(1000, 1000, 2), (9000, 600, 1)]


def test_driver_event_intervals_are_runtime_on_their_thread(tmp_path: Path) -> None:
    """The columns of `metal-driver-event-intervals` as Instruments 27 lists them (memory
    wiring by the driver), with the thread's process written once and referenced."""
    cols = "".join(
        f"<col><mnemonic>{m}</mnemonic><engineering-type>{t}</engineering-type></col>"
        for m, t in (
            ("start", "start-time"), ("duration", "duration"),
            ("gpu-driver-name", "gpu-driver-name"), ("event-type", "gpu-driver-name"),
            ("event-label", "formatted-label"), ("process", "process"), ("thread", "thread"),
        )
    )  # fmt: skip
    row = (
        '<row><start-time id="1">900969000</start-time><duration id="2">6625</duration>'
        '<gpu-driver-name id="3" fmt="Driver Processing">Driver Processing</gpu-driver-name>'
        '<gpu-driver-name id="4" fmt="Wire Memory">Wire Memory</gpu-driver-name>'
        '<formatted-label id="5" fmt="Wire 16.00 KiB System Memory (Success)"/>'
        '<process id="6" fmt="python (99926)"><pid id="7" fmt="99926">99926</pid></process>'
        '<thread id="8" fmt="python (0x11ab9f0) (python, pid: 99926)"><tid id="9" '
        'fmt="0x11ab9f0">18528752</tid><process ref="6"/></thread></row>'
    )
    (event,) = read(tmp_path, doc(row, schema="metal-driver-event-intervals", cols=cols))
    assert (event.kind, event.name, event.pid, event.tid, event.start_ns, event.dur_ns) == (  # type: ignore[attr-defined]
        EventKind.RUNTIME, "Driver Processing: Wire Memory", 99926, 0x11AB9F0, 900969000, 6625,
    )  # fmt: skip


def test_a_gzipped_export_reads_the_same(tmp_path: Path) -> None:
    import gzip

    with parse_file(TRACE) as parsed:
        plain = [(e.kind, e.name, e.start_ns, e.dur_ns) for e in parsed.events]
    events = read(tmp_path, gzip.compress(TRACE.read_bytes()), "trace.xml.gz")
    assert [(e.kind, e.name, e.start_ns, e.dur_ns) for e in events] == plain  # type: ignore[attr-defined]
