"""The rocprof and ncu CSV parsers against the csv-module ones before them: same events, or not.

Run: `python perf/compare_csv.py [--old REV] [--mutants N] [--time FILE] [--make-large PATH]`.

The old parsers are the whole `ingest` package at git revision `--old` (default: the commit
before the pyarrow CSV readers), unpacked into a temporary folder and run in their own
process (`compare_kineto.dump`), so nothing of today's code is shared with them. Both sides
parse every file through `ingest.parse_file` and dump, per file, the header, every event
(all fields, args as ordered items so key order and int/float are compared too), the
report (skips, warnings, progress) and the error (type, message, offset, location). Any
difference is printed; the exit status is 1 when there is one.

Files: every CSV (and rocprof archive) under tests/data/rocprof and tests/data/ncu and, with
PERFDASH_TEST_CORPUS set, the corpus's rocprof_v1/, rocprofv3/ and h200/ CSVs, plus
`--mutants N` damaged copies of small ones (truncated, bytes replaced by CSV-significant
characters, NUL, invalid UTF-8, a BOM, a quote opened and never closed, cells removed).

`--time FILE`: parse-only time on the ingest's path (drain `parse_file(FILE).items`, the
blocks not turned into `Event`s), old and new alternating, each run in a fresh process;
prints the median of `--repeat` runs (`compare_kineto.timing`); `--new REV` times a commit
instead of the working tree.
`--make-large PATH --rows N`: write a rocprof v1 results.csv of N dispatches for timing.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare_kineto import REPO, compare, dump, old_tree, timing

OLD_REV = "e8f1e3f"  # main before the pyarrow CSV readers
_NAMES = (
    "__amd_rocclr_fillBufferAligned.kd",
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float> >(int, "
    "at::native::FillFunctor<float>, std::array<char*, 1ul>) [clone .kd]",
    "ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)",
    'Cijk_Alik_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1_SN_1LDSB0_"quoted"',
)


def csv_files() -> list[Path]:
    """Every rocprof/ncu CSV and rocprof archive in the tests' data and the corpus."""
    found = sorted((REPO / "tests" / "data" / "rocprof").rglob("*.csv"))
    found += sorted((REPO / "tests" / "data" / "rocprof").glob("*.zip"))
    found += sorted((REPO / "tests" / "data" / "rocprof").glob("*.tar.gz"))
    found += sorted((REPO / "tests" / "data" / "ncu").glob("*.csv"))
    corpus = os.environ.get("PERFDASH_TEST_CORPUS")
    if corpus:
        for folder in ("rocprof_v1", "rocprofv3", "h200"):
            found += sorted((Path(corpus) / folder).glob("*.csv"))
    return found


MUTANT_SOURCES = (
    "tests/data/rocprof/v1/results.csv",
    "tests/data/rocprof/v2/results_hip_api_trace.csv",
    "tests/data/rocprof/v3_old_kernel_trace.csv",
    "tests/data/rocprof/v1_old_results.csv",
    "tests/data/ncu/gemm_elementwise_raw.csv",
    "tests/data/ncu/gemm_elementwise_details.csv",
    "tests/data/ncu/gemm_elementwise_summary.csv",
)


def mutants(into: Path, n: int, seed: int = 17) -> list[Path]:
    """`n` damaged copies of small CSVs: the skip and error paths' inputs."""
    rng = random.Random(seed)
    sources = [(REPO / s).read_bytes() for s in MUTANT_SOURCES]
    out = []
    for i in range(n):
        text = sources[i % len(sources)]
        kind = (i // len(sources)) % 6
        if kind == 0:  # truncated anywhere
            data = text[: rng.randrange(1, len(text))]
        elif kind == 1:  # bytes replaced by CSV-significant ones
            buf = bytearray(text)
            for _ in range(rng.randrange(1, 4)):
                buf[rng.randrange(len(buf))] = rng.choice(b',"\n\r x0-.\x00\xff')
            data = bytes(buf)
        elif kind == 2:  # a BOM, or a quote never closed
            cut = rng.randrange(len(text))
            data = b"\xef\xbb\xbf" + text if rng.random() < 0.5 else text[:cut] + b'"' + text[cut:]
        elif kind == 3:  # a cell removed or added on some line
            lines = text.split(b"\n")
            j = rng.randrange(1, max(2, len(lines) - 1))
            cells = lines[j].split(b",")
            if len(cells) > 1 and rng.random() < 0.5:
                del cells[rng.randrange(len(cells))]
            else:
                cells.insert(rng.randrange(len(cells) + 1), b"7")
            lines[j] = b",".join(cells)
            data = b"\n".join(lines)
        elif kind == 4:  # a cell's value replaced
            lines = text.split(b"\n")
            j = rng.randrange(1, max(2, len(lines) - 1))
            cells = lines[j].split(b",")
            cells[rng.randrange(len(cells))] = rng.choice(
                [b"", b"n/a", b"0x1F", b"1e3", b"-5", b"nan", b"inf", b'"1,234"', b"1.5", b"a"]
            )
            lines[j] = b",".join(cells)
            data = b"\n".join(lines)
        else:  # blank lines, CRLF, a blank-celled row
            lines = text.split(b"\n")
            j = rng.randrange(1, max(2, len(lines)))
            lines.insert(j, rng.choice([b"", b",,,", b"  ", b"\r"]))
            data = (b"\r\n" if rng.random() < 0.3 else b"\n").join(lines)
        name = Path(MUTANT_SOURCES[i % len(sources)]).name
        path = into / f"m{i:04d}" / name
        path.parent.mkdir()
        path.write_bytes(data)
        out.append(path)
    return out


def make_large(path: Path, rows: int, seed: int = 3) -> None:
    """A rocprof v1 results.csv of `rows` dispatches, in the corpus file's column set."""
    rng = random.Random(seed)
    head = (
        '"Index","KernelName","gpu-id","queue-id","queue-index","pid","tid","grd","wgr","lds",'
        '"scr","arch_vgpr","accum_vgpr","sgpr","wave_size","sig","obj","DispatchNs","BeginNs",'
        '"EndNs","CompleteNs","DurationNs"\n'
    )
    t = 769537349987029
    with path.open("w") as f:
        f.write(head)
        for i in range(rows):
            name = rng.choice(_NAMES).replace('"', '""')
            dur = rng.randrange(1000, 200000)
            grd, wgr = rng.choice([(256, 256), (1048576, 256), (65536, 64)])
            f.write(
                f'{i},"{name}",{rng.randrange(2)},0,{i * 2},2375942,2375942,{grd},{wgr},0,0,'
                f'16,0,128,32,"0x0","0x709f0b65d740",{t},{t + 500},{t + 500 + dur},'
                f"{t + 600 + dur},{dur}\n"
            )
            t += dur + rng.randrange(100, 5000)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--old", default=OLD_REV, help="git revision of the old parsers")
    parser.add_argument("--new", help="time this git revision as the new side (default: the tree)")
    parser.add_argument("--mutants", type=int, default=0)
    parser.add_argument("--time", type=Path, help="time parse-only on this file instead")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--make-large", type=Path, help="write a large results.csv here")
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args()
    if args.make_large:
        make_large(args.make_large, args.rows)
        return 0
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        old = old_tree(args.old, tmp / "old", as_is=True)
        if args.time:
            new = old_tree(args.new, tmp / "new", as_is=True) if args.new else REPO
            timing(args.time.resolve(), old, args.repeat, new=new)
            return 0
        files = [f.resolve() for f in args.files] or csv_files()
        (tmp / "mutants").mkdir()
        files += mutants(tmp / "mutants", args.mutants)
        t0 = time.perf_counter()
        before = dump(old, files, tmp / "old.pickle")
        after = dump(REPO, files, tmp / "new.pickle")
        differ, _ = compare(before, after)
        events = sum(len(v["events"]) for v in after.values())
        errors = sum(v["error"] is not None for v in after.values())
        print(
            f"{len(files)} files ({args.mutants} mutants), {events} events, {errors} errors: "
            f"{differ} differ ({time.perf_counter() - t0:.0f} s)"
        )
        return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
