"""Real nsys exports, their `nsys stats` references, and damaged or re-shaped copies of them.

Every variant starts from a committed export made on the H200 (tests/data/nsys/README.md)
and changes one thing with plain SQL or bytes, so each test knows exactly what is wrong.
"""

from __future__ import annotations

import csv
import shutil
import sqlite3
from pathlib import Path

from tests.conftest import CORPUS

DATA = Path(__file__).resolve().parents[1] / "data"
NSYS = DATA / "nsys"
NCU = DATA / "ncu"
CORPUS_H200 = CORPUS / "h200"
FIXTURES = ("train_step", "copies", "nccl_2gpu")


def kern_sum(path: Path) -> list[tuple[str, int, int]]:
    """`nsys stats --report cuda_gpu_kern_sum --format csv`: (name, instances, total ns)."""
    with path.open(newline="") as f:
        return [
            (r["Name"], int(r["Instances"]), int(float(r["Total Time (ns)"])))
            for r in csv.DictReader(f)
        ]


def copy_of(src: Path, dst_dir: Path, name: str = "copy.sqlite") -> Path:
    """A writable copy of a fixture."""
    dst = dst_dir / name
    shutil.copyfile(src, dst)
    return dst


def edit(path: Path, *statements: str) -> Path:
    """Run SQL statements on a copy (autocommit, so ALTER/DROP/VACUUM work)."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        for sql in statements:
            conn.execute(sql)
    finally:
        conn.close()
    return path


def corrupt_table_page(path: Path, table: str, *, rows_only: bool = False) -> Path:
    """Overwrite one leaf page of `table` with garbage (a disk error mid-file).

    With `rows_only`, the page header and cell pointers survive, so counting the table's
    rows still works and the damage shows only when the middle leaf page's rows are read.
    """
    conn = sqlite3.connect(path)
    try:
        size = conn.execute("PRAGMA page_size").fetchone()[0]
        pages = [
            r[0]
            for r in conn.execute(
                "SELECT pageno FROM dbstat WHERE name = ? AND pagetype = 'leaf' ORDER BY pageno",
                (table,),
            )
        ]
    finally:
        conn.close()
    page, start = (pages[len(pages) // 2], size // 2) if rows_only else (pages[0], 0)
    with path.open("r+b") as f:
        f.seek((page - 1) * size + start)
        f.write(b"\xa5" * (size - start))
    return path


def replicate_kernels(path: Path, times: int) -> Path:
    """Append `times` shifted copies of every kernel row (a larger export of the same shape)."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        cols = [r[1] for r in conn.execute("PRAGMA table_info(CUPTI_ACTIVITY_KIND_KERNEL)")]
        rest = ", ".join(c for c in cols if c not in ("start", "end"))
        span = conn.execute(
            "SELECT max(end) - min(start) + 1 FROM CUPTI_ACTIVITY_KIND_KERNEL"
        ).fetchone()[0]
        for i in range(1, times + 1):
            conn.execute(
                f"INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, {rest}) "
                f"SELECT start + {i * span}, end + {i * span}, {rest} "
                "FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE start < "
                f"(SELECT min(start) + {span} FROM CUPTI_ACTIVITY_KIND_KERNEL)"
            )
    finally:
        conn.close()
    return path
