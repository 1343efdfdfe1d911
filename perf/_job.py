"""A training job's rank files made from the committed H200 trace, for the job benchmarks.

Each rank is the same torch.profiler trace (`_bench.scaled_trace`: the 186k stored events
repeated `scale` times, 745k at the default 4) with `distributedInfo` saying which rank of
how many it is, written before `traceEvents` as Kineto does (`ingest.rank_sniff` reads it
from the head). Uploaded together, the files become one multi-rank trace
(`backend.services.traces.upload_bundle`); `job_archive` builds that zip directly.

The benchmarks run as scripts, so this imports as `_job`.
"""

from __future__ import annotations

import gzip
import zipfile
from pathlib import Path

import orjson
from _bench import scaled_trace

SCALE = 4  # 186k stored events x 4 = 745k per rank, the per-rank size


def build_job(n_ranks: int, out_dir: Path, *, scale: int = SCALE) -> list[Path]:
    """Write `n_ranks` rank files `rank{r}.pt.trace.json.gz` into `out_dir` (kept if they
    are there already) and return their paths, rank order."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / f"rank{r}.pt.trace.json.gz" for r in range(n_ranks)]
    if all(p.is_file() for p in paths):
        return paths
    doc = orjson.loads(gzip.decompress(scaled_trace(scale).read_bytes()))
    events = doc.pop("traceEvents")
    for rank, path in enumerate(paths):
        info = {"backend": "nccl", "rank": rank, "world_size": n_ranks}
        head = {**doc, "distributedInfo": info}
        body = orjson.dumps({**head, "traceEvents": events})
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(gzip.compress(body, compresslevel=1))
        tmp.rename(path)
    return paths


def job_archive(n_ranks: int, out_dir: Path, *, scale: int = SCALE) -> Path:
    """The job's rank files in one uncompressed zip, as a multi-file upload stores them."""
    archive = out_dir / f"job{n_ranks}.zip"
    if not archive.is_file():
        files = build_job(n_ranks, out_dir / f"job{n_ranks}", scale=scale)
        tmp = archive.with_suffix(".tmp")
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
            for path in files:
                zf.write(path, path.name)
        tmp.rename(archive)
    return archive
