"""Distinct ~50 MB torch.profiler uploads for the load test, made cheaply from one trace.

The base is `perf/data/h200_gpt_12l.pt.trace.json.gz` repeated `--scale` times with shifted
times (`bench_ingest.scaled_trace`, built once and cached in perf/data; x8 is 47 MB gzip,
1.97M events). perfdash keeps one trace per distinct blob (sha256), so each copy gets a
second gzip member holding a different amount of trailing JSON whitespace: the bytes
differ, the decompressed document is the same valid JSON, and nothing is re-encoded.

Run: `python perf/load_traces.py [--out-dir perf/data] [--copies 10] [--scale 8]`; the
copies are named `h200_gpt_12l.xN.loadK.pt.trace.json.gz`, which git ignores.
"""

from __future__ import annotations

import argparse
import gzip
import shutil
from pathlib import Path

from bench_ingest import scaled_trace


def build_copies(out_dir: Path, copies: int, scale: int) -> list[Path]:
    """`copies` files in `out_dir`, each the scaled trace plus a distinct whitespace member."""
    base = scaled_trace(scale)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for k in range(1, copies + 1):
        path = out_dir / base.name.replace(".pt.trace", f".load{k:02d}.pt.trace")
        if not path.exists() or path.stat().st_size <= base.stat().st_size:
            tmp = path.with_suffix(".tmp")
            shutil.copyfile(base, tmp)
            with tmp.open("ab") as f:
                f.write(gzip.compress(b"\n" + b" " * k + b"\n"))
            tmp.rename(path)
        paths.append(path)
    return paths


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out-dir", type=Path, default=Path(__file__).parent / "data")
    ap.add_argument("--copies", type=int, default=10)
    ap.add_argument("--scale", type=int, default=8, help="x the 246k-event base trace")
    args = ap.parse_args()
    for path in build_copies(args.out_dir, args.copies, args.scale):
        print(f"{path}  {path.stat().st_size / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
