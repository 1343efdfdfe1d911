"""Vendor command-line tools that turn binary reports into files perfdash reads.

An Nsight Systems report (``.nsys-rep``) is read through its sqlite export and an Nsight
Compute report (``.ncu-rep``) through its raw CSV page. Neither format is documented, so
perfdash never decodes them itself: when the worker has the tool, the parser runs it;
otherwise the error gives the exact command to run by hand. The paths arrive as parse
options (`ExternalTools`), so `ingest` never reads settings.

Public surface: `ExternalTools`, `NSYS_REP_MAGIC`, `NCU_REP_MAGIC`, `is_nsys_report`,
`is_ncu_report`, `export_nsys_sqlite`, `import_ncu_csv`, `readable_file`, `remove_workdir`.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from ingest._io import read_head
from ingest.errors import ParseError, UnsupportedFormatError

REPORT_PREFIX = "perfdash-report-"  # folders of vendor-tool exports (swept like archives')

# The first bytes of reports written by Nsight Systems 2025.3 and Nsight Compute 2025.3.
NSYS_REP_MAGIC = b"NVIDIA Tegra Profiler Report"
NCU_REP_MAGIC = b"NVR\x00"
_NSYS_SUFFIXES = (".nsys-rep", ".qdrep")
_OUTPUT_TAIL = 600


@dataclass(frozen=True, slots=True)
class ExternalTools:
    """Paths of the vendor tools a worker may use; None means "not installed here"."""

    nsys: Path | None = None
    ncu: Path | None = None
    timeout_s: float = 1800.0


def is_nsys_report(head: bytes, name: str) -> bool:
    """True for an Nsight Systems report by its magic bytes or, failing that, its name.

    >>> is_nsys_report(b"NVIDIA Tegra Profiler Report 36398880.", "x.bin")
    True
    >>> is_nsys_report(b"\\x00\\x01", "run.qdrep"), is_nsys_report(b"{}", "t.json")
    (True, False)
    """
    return head.startswith(NSYS_REP_MAGIC) or name.lower().endswith(_NSYS_SUFFIXES)


def is_ncu_report(head: bytes, name: str) -> bool:
    """True for an Nsight Compute report by its magic bytes or, failing that, its name.

    >>> is_ncu_report(b"NVR\\x00\\x02\\x00", "r"), is_ncu_report(b"", "gemm.ncu-rep")
    (True, True)
    """
    return head.startswith(NCU_REP_MAGIC) or name.lower().endswith(".ncu-rep")


_Convert = Callable[[Path, Path, "ExternalTools", str], Path]


def readable_file(
    path: Path,
    source: str,
    tools: ExternalTools | None,
    is_report: Callable[[bytes, str], bool],
    convert: _Convert,
) -> tuple[Path, Path | None]:
    """The file to parse: `path` itself, or a vendor report converted by its tool into a
    temporary folder, returned too so the caller removes it once the events are read.

    Raises:
        UnsupportedFormatError, ParseError: from `convert` (no tool, or the tool failed).
    """
    if not is_report(read_head(path, 64), source):
        return path, None
    workdir = Path(tempfile.mkdtemp(prefix=REPORT_PREFIX))
    try:
        return convert(path, workdir, tools or ExternalTools(), source), workdir
    except BaseException:
        remove_workdir(workdir)
        raise


def remove_workdir(workdir: Path | None) -> None:
    """Delete a temporary folder made by `readable_file` (None: nothing to do)."""
    if workdir is not None:
        shutil.rmtree(workdir, ignore_errors=True)


def export_nsys_sqlite(report: Path, out_dir: Path, tools: ExternalTools, source: str) -> Path:
    """Export an ``.nsys-rep`` to sqlite with the configured ``nsys``.

    Raises:
        UnsupportedFormatError: no nsys is configured; the message gives the command.
        ParseError: nsys failed or timed out on the file.
    """
    stem = Path(source).stem or "report"
    if tools.nsys is None:
        raise UnsupportedFormatError(
            f"{source}: an Nsight Systems report (.nsys-rep) is read through its sqlite "
            f"export, and this worker has no nsys (setting PERFDASH_NSYS_PATH). Run "
            f"`nsys export --type sqlite -o {stem}.sqlite {source}` and upload "
            f"{stem}.sqlite instead"
        )
    out = out_dir / "report.sqlite"
    cmd = [str(tools.nsys), "export", "--type", "sqlite", "--force-overwrite", "true"]
    _run([*cmd, "-o", str(out), str(report)], tools.timeout_s, source, "nsys export")
    if not out.is_file():
        raise ParseError("nsys export wrote no sqlite file", source=source)
    return out


def import_ncu_csv(report: Path, out_dir: Path, tools: ExternalTools, source: str) -> Path:
    """Print an ``.ncu-rep``'s raw page as CSV with the configured ``ncu``.

    Raises:
        UnsupportedFormatError: no ncu is configured; the message gives the command.
        ParseError: ncu failed or timed out on the file.
    """
    stem = Path(source).stem or "report"
    if tools.ncu is None:
        raise UnsupportedFormatError(
            f"{source}: an Nsight Compute report (.ncu-rep) is read through its CSV, and "
            f"this worker has no ncu (setting PERFDASH_NCU_PATH). Run "
            f"`ncu --import {source} --csv --page raw > {stem}.csv` and upload {stem}.csv "
            f"instead"
        )
    out = out_dir / "report.csv"
    cmd = [str(tools.ncu), "--import", str(report), "--csv", "--page", "raw"]
    with out.open("wb") as sink:
        _run(cmd, tools.timeout_s, source, "ncu --import", stdout=sink)
    return out


def _run(
    cmd: list[str], timeout_s: float, source: str, what: str, stdout: IO[bytes] | None = None
) -> None:
    """Run a tool; a failure becomes a ParseError quoting the end of its output."""
    try:
        done = subprocess.run(
            cmd,
            stdout=stdout if stdout is not None else subprocess.PIPE,
            stderr=subprocess.PIPE,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired as e:
        raise ParseError(f"{what} did not finish within {timeout_s:.0f} s", source=source) from e
    except OSError as e:
        raise ParseError(f"cannot run {what} ({cmd[0]}): {e}", source=source) from e
    if done.returncode != 0:
        tail = (done.stderr or b"").decode("utf-8", "replace").strip()[-_OUTPUT_TAIL:]
        raise ParseError(f"{what} failed with exit code {done.returncode}: {tail}", source=source)
