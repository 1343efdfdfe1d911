"""Write the xctrace (Instruments Metal System Trace) fixtures in tests/data/xctrace/.

Synthetic: no Mac is available here. The shape follows public material (see
tests/data/xctrace/README.md): `<trace-query-result>` / `<node xpath>` / `<schema>` with
`<col>` mnemonic, name, engineering-type / `<row>`s of typed cells; interned values as
`id="N"` then `<tag ref="N"/>` across rows and nodes; `<sentinel/>` for empty cells; the
columns of each table as an Instruments 27.2 Metal System Trace lists them.

Run: python tests/data/make_xctrace_fixtures.py (deterministic: fixed seed).
"""

from __future__ import annotations

import random
import zipfile
from html import escape
from pathlib import Path

OUT = Path(__file__).resolve().parent / "xctrace"
PID, APP = 4242, "trainer"
GPU_NAME = "Apple M3 Max"
SUBMISSION = 0x4E180000
CB_BASE = 0x154D189050

COLUMNS = {
    "metal-gpu-intervals": [
        ("start", "Creation", "start-time"),
        ("duration", "Duration", "duration"),
        ("channel-name", "Channel Name", "gpu-channel-name"),
        ("frame-number", "Frame", "gpu-frame-number"),
        ("start-latency", "CPU to GPU Latency", "duration"),
        ("event-depth", "Depth", "metal-nesting-level"),
        ("event-label", "Label", "formatted-label"),
        ("state", "State", "gpu-state"),
        ("connection-UUID", "Connection UUID", "connection-uuid64"),
        ("color", "Color", "render-buffer-depth"),
        ("process", "Process", "process"),
        ("gpu", "Metal Device", "metal-device-name"),
        ("channel-subtitle", "Channel Subtitle", "metal-object-label"),
        ("iosurface-accesses", "IOSurface Accesses", "formatted-label"),
        ("bytes", "Bytes", "size-in-bytes"),
        ("cmdbuffer-id", "Commmand Buffer Id", "metal-command-buffer-id"),
        ("encoder-id", "Encoder Id", "metal-command-buffer-id"),
        ("gpu-submission-id", "GPU Submission Id", "uint64"),
    ],
    "metal-application-command-buffer-submissions": [
        ("start", "Creation", "start-time"),
        ("duration", "Duration", "duration"),
        ("event-type", "Event Type", "metal-event-name"),
        ("gpu", "Metal Device", "metal-device-name"),
        ("track-label", "Track Label", "metal-object-label"),
        ("num-encoders", "# Encoders", "uint32"),
        ("encoder-time", "Encoder Time", "duration"),
        ("process", "Process", "process"),
        ("thread", "Thread", "thread"),
        ("event-icon", "Event Icon", "metal-event"),
        ("event-label", "Note", "narrative"),
        ("encoder-time-label", "Encoder Time Label", "narrative"),
        ("frame-number", "Frame #", "uint32"),
        ("color", "Color", "render-buffer-depth"),
        ("cmdbuffer-id", "Commmand Buffer Id", "metal-command-buffer-id"),
    ],
    "metal-application-encoders-list": [
        ("start", "Creation", "start-time"),
        ("duration", "Duration", "duration"),
        ("thread", "Thread", "thread"),
        ("process", "Process", "process"),
        ("gpu", "Metal Device", "metal-device-name"),
        ("frame-number", "Frame", "gpu-frame-number"),
        ("cmdbuffer-label", "Command Buffer", "metal-object-label"),
        ("cmdbuffer-label-indexed", "Command Buffer (Indexed)", "metal-object-label"),
        ("encoder-label", "Encoder", "metal-object-label"),
        ("encoder-label-indexed", "Encoder (Indexed)", "metal-object-label"),
        ("event-type", "Event Type", "metal-event-name"),
        ("cmdbuffer-id", "Commmand Buffer Id", "metal-command-buffer-id"),
        ("encoder-id", "Encoder Id", "metal-command-buffer-id"),
    ],
    "metal-driver-intervals": [
        ("start", "Creation", "start-time"),
        ("duration", "Duration", "duration"),
        ("gpu-driver-name", "GPU Driver Name", "gpu-driver-name"),
        ("event-type", "Event Type", "metal-object-label"),
        ("event-depth", "Depth", "metal-nesting-level"),
        ("event-label", "Event", "formatted-label"),
        ("event-priority", "Priority", "metal-workload-priority"),
        ("connection-UUID", "Connection UUID", "connection-uuid64"),
        ("color", "Color", "render-buffer-depth"),
        ("process", "Process", "process"),
        ("thread", "Thread", "thread"),
        ("gpu", "Metal Device", "metal-device-name"),
        ("object-id", "Object ID", "metal-command-buffer-id"),
        ("lane", "Lane", "formatted-label"),
    ],
}
# (command buffer label, channel, [encoder labels]) per kind of command buffer.
WORKLOADS = [
    ("Shadow", "Vertex", ["Shadow Depth"]),
    ("Scene", "Fragment", ["GBuffer", "Lighting"]),
    ("Inference", "Compute", ["matmul_f16_64x64", "softmax_rows", "layernorm_f16"]),
    ("Upload", "Blit", ["Blit Upload"]),
]


Cell = tuple  # (tag, text, fmt, inner cells); rendered, and interned, in file order
S: Cell = ("sentinel", "", "", ())


class Doc:
    """An xctrace-style writer: a value is written once with an id, then referenced.

    Cells are built as tuples and rendered when a table is written, so that every id is
    defined before its first ref in file order, as in an export.
    """

    def __init__(self) -> None:
        self.ids: dict[Cell, int] = {}
        self.parts: list[str] = []

    @staticmethod
    def cell(tag: str, text: str | int, fmt: str = "", inner: tuple[Cell, ...] = ()) -> Cell:
        return (tag, str(text), fmt, inner)

    def render(self, cell: Cell) -> str:
        tag, text, fmt, inner = cell
        if tag == "sentinel":
            return "<sentinel/>"
        if cell in self.ids:
            return f'<{tag} ref="{self.ids[cell]}"/>'
        self.ids[cell] = len(self.ids) + 1
        fmt_attr = f' fmt="{escape(fmt)}"' if fmt else ""
        body = "".join(self.render(c) for c in inner) if inner else escape(text)
        return f'<{tag} id="{self.ids[cell]}"{fmt_attr}>{body}</{tag}>'

    def process(self, name: str, pid: int) -> Cell:
        return self.cell("process", "", f"{name} ({pid})", (self.cell("pid", pid, str(pid)),))

    def thread(self, name: str, tid: int, process: str, pid: int) -> Cell:
        inner = (self.cell("tid", tid, hex(tid)), self.process(process, pid))
        return self.cell("thread", "", f"{name} ({hex(tid)}) ({process}, pid: {pid})", inner)

    def time(self, tag: str, ns: int) -> Cell:
        clock = (
            f"{ns // 60_000_000_000:02d}:{ns // 1_000_000_000 % 60:02d}."
            f"{ns // 1_000_000 % 1000:03d}.{ns // 1000 % 1000:03d}"
        )
        return self.cell(tag, ns, clock if tag == "start-time" else f"{ns / 1000:.2f} µs")

    def table(self, number: int, schema: str, rows: list[list[Cell]]) -> None:
        cols = "".join(
            f"<col><mnemonic>{m}</mnemonic><name>{n}</name>"
            f"<engineering-type>{t}</engineering-type></col>"
            for m, n, t in COLUMNS[schema]
        )
        xpath = f"//trace-toc[1]/run[1]/data[1]/table[{number}]"
        self.parts.append(f'<node xpath="{xpath}"><schema name="{schema}">{cols}</schema>\n')
        for row in rows:
            assert len(row) == len(COLUMNS[schema]), schema
            self.parts.append("<row>" + "".join(self.render(c) for c in row) + "</row>\n")
        self.parts.append("</node>\n")

    def text(self) -> str:
        body = "".join(self.parts)
        return f'<?xml version="1.0"?>\n<trace-query-result>\n{body}</trace-query-result>\n'


def build(doc: Doc, frames: int, seed: int) -> dict[str, list[list[Cell]]]:
    """Rows of every table for `frames` frames of a game-plus-inference workload."""
    rng = random.Random(seed)
    tables: dict[str, list[list[Cell]]] = {s: [] for s in COLUMNS}
    cb_serial = 0
    for frame in range(1, frames + 1):
        t = 1_000_000 + frame * 16_666_667
        gpu_free = t + 2_000_000
        for cb_label, channel, encoders in WORKLOADS:
            if channel == "Blit" and frame % 3:
                continue
            cb_id = CB_BASE + 2 * cb_serial
            cb_serial += 1
            enc_start = t
            enc_rows = []
            for k, enc in enumerate(encoders):
                dur = rng.randint(20_000, 120_000)
                enc_rows.append((enc, enc_start, dur, cb_id + 1 + k))
                enc_start += dur + 5_000
            commit_dur = rng.randint(8_000, 40_000)
            commit_at = enc_start
            thread = doc.thread("Main Thread", 0x11AB5B7, APP, PID)
            process = doc.process(APP, PID)
            gpu = doc.cell("metal-device-name", GPU_NAME, GPU_NAME)
            for enc, start, dur, enc_id in enc_rows:
                tables["metal-application-encoders-list"].append([
                    doc.time("start-time", start), doc.time("duration", dur), thread, process, gpu,
                    doc.cell("gpu-frame-number", frame, f"Frame {frame}"),
                    doc.cell("metal-object-label", cb_label, cb_label),
                    doc.cell("metal-object-label", f"[0] {cb_label}", f"[0] {cb_label}"),
                    doc.cell("metal-object-label", enc, enc),
                    doc.cell("metal-object-label", f"[0] {enc}", f"[0] {enc}"),
                    doc.cell("metal-event-name", "Encoding", "Encoding"),
                    doc.cell("metal-command-buffer-id", cb_id, hex(cb_id)),
                    doc.cell("metal-command-buffer-id", enc_id, hex(enc_id)),
                ])  # fmt: skip
            n = len(encoders)
            note = f'Committed "{cb_label}" with {n} encoder{"s" if n > 1 else ""}'
            enc_total = sum(d for _, _, d, _ in enc_rows)
            tables["metal-application-command-buffer-submissions"].append([
                doc.time("start-time", commit_at), doc.time("duration", commit_dur),
                doc.cell("metal-event-name", "CommandBufferSubmission", "CommandBufferSubmission"),
                gpu, S, doc.cell("uint32", n, str(n)), doc.time("duration", enc_total), process,
                thread, doc.cell("metal-event", "Green", "Green"),
                doc.cell("narrative", "", note), S, doc.cell("uint32", frame, str(frame)),
                doc.cell("render-buffer-depth", 0, "0"),
                doc.cell("metal-command-buffer-id", cb_id, hex(cb_id)),
            ])  # fmt: skip
            driver_thread = doc.thread("python", 0x11AB9F0, APP, PID)
            drv_start = commit_at + commit_dur + 3_000
            drv_dur = rng.randint(10_000, 60_000)
            for kind, depth, label, d0, dd in (
                (
                    "Command Buffer",
                    0,
                    f"{cb_label} ({APP} (0x11ab9f0) ({APP}, pid: {PID}))",
                    0,
                    drv_dur,
                ),
                ("Command Encoder", 1, encoders[0], 2_000, drv_dur // 2),
            ):
                tables["metal-driver-intervals"].append([
                    doc.time("start-time", drv_start + d0), doc.time("duration", dd),
                    doc.cell("gpu-driver-name", "Driver Processing", "Driver Processing"),
                    doc.cell("metal-object-label", kind, kind),
                    doc.cell("metal-nesting-level", depth, str(depth)),
                    doc.cell("formatted-label", "", label),
                    doc.cell("metal-workload-priority", 0, "0x0"), S,
                    doc.cell("render-buffer-depth", 0, "0"), process, driver_thread, gpu,
                    doc.cell("metal-command-buffer-id", 2**64 - 1, "0xffffffffffffffff"), S,
                ])  # fmt: skip
            gpu_start = max(gpu_free, drv_start + drv_dur + rng.randint(20_000, 80_000))
            for enc, _, _, enc_id in enc_rows:
                dur = (
                    rng.randint(50_000, 900_000)
                    if channel != "Blit"
                    else rng.randint(30_000, 90_000)
                )
                sub = SUBMISSION + cb_serial * 7 + enc_id % 5
                # Both spacings of the process suffix are seen in public exports.
                proc = f"( {APP} ({PID}) )  " if frame % 2 else f"({APP} ({PID})) "
                label = f"{cb_label}:{enc}   {proc}{hex(sub)}"
                size = rng.randint(1, 64) * 65536 if channel == "Blit" else 0
                # Metal writes some encoders twice: a nested row, later start, same end.
                nested = [(gpu_start, dur, 0)]
                if rng.random() < 0.25:
                    nested.append((gpu_start + dur // 3, dur - dur // 3, 1))
                for row_start, row_dur, depth in nested:
                    tables["metal-gpu-intervals"].append([
                        doc.time("start-time", row_start), doc.time("duration", row_dur),
                        doc.cell("gpu-channel-name", channel, channel),
                        doc.cell("gpu-frame-number", frame, f"Frame {frame}"),
                        doc.time("duration", row_start - commit_at),
                        doc.cell("metal-nesting-level", depth, str(depth)),
                        doc.cell("formatted-label", "", label, (process,)),
                        doc.cell("gpu-state", "Active", "Active"),
                        doc.cell("connection-uuid64", cb_serial, str(cb_serial)),
                        doc.cell("render-buffer-depth", 0, "0"), process, gpu, S, S,
                        doc.cell("size-in-bytes", size, f"{size} Bytes"),
                        doc.cell("metal-command-buffer-id", cb_id, hex(cb_id)),
                        doc.cell("metal-command-buffer-id", enc_id, hex(enc_id)),
                        doc.cell("uint64", sub, f"{sub:,}"),
                    ])  # fmt: skip
                gpu_start += dur + rng.randint(2_000, 30_000)
            gpu_free = gpu_start
        # The compositor shares the GPU: its work is in the table, with no commit of ours.
        ws = doc.process("WindowServer", 635)
        ws_cb = 0x3AC1A69 + frame
        ws_start = t + 12_000_000
        ws_label = (
            f"CA Composite:Fragment   (WindowServer (635)) {hex(SUBMISSION + 99_000 + frame)}"
        )
        tables["metal-gpu-intervals"].append([
            doc.time("start-time", ws_start), doc.time("duration", 180_000),
            doc.cell("gpu-channel-name", "Fragment", "Fragment"), S, S,
            doc.cell("metal-nesting-level", 0, "0"), doc.cell("formatted-label", "", ws_label),
            doc.cell("gpu-state", "Active", "Active"), S, doc.cell("render-buffer-depth", 0, "0"),
            ws, doc.cell("metal-device-name", GPU_NAME, GPU_NAME), S, S,
            doc.cell("size-in-bytes", 0, "0 Bytes"),
            doc.cell("metal-command-buffer-id", ws_cb, hex(ws_cb)), S, S,
        ])  # fmt: skip
    return tables


def main() -> None:
    OUT.mkdir(exist_ok=True)
    doc = Doc()
    tables = build(doc, frames=60, seed=26)
    for number, schema in enumerate(COLUMNS, start=110):
        doc.table(number, schema, tables[schema])
    (OUT / "metal_system_trace.xml").write_text(doc.text(), encoding="utf-8")
    # The same kind of recording as separate exports (one `xctrace export` per table, each
    # with its own ids), zipped: an archive of exports is one trace.
    with zipfile.ZipFile(OUT / "metal_tables.zip", "w", zipfile.ZIP_DEFLATED) as archive:
        rows = build(Doc(), frames=12, seed=7)
        for number, schema in enumerate(COLUMNS, start=110):
            single = Doc()
            single.table(number, schema, rows[schema])
            archive.writestr(f"run1/{schema}.xml", single.text())


if __name__ == "__main__":
    main()
