"""Safe extraction of uploaded archives (a multi-rank torch run, a rocprofv3 output folder).

Archives come from users, so nothing in them is trusted: the kind is recognised by magic
bytes, only regular files are written, and only under a fresh temporary folder that is removed
on exit. Sizes are counted while the bytes stream out, never taken from headers, so an archive
bomb stops at the cap instead of filling the disk or the memory.

Scratch space is bounded by the caller's `max_total_bytes` (the worker's
`PERFDASH_ARCHIVE_SCRATCH_BYTES`) and removed on every exit: the `with` block's end, an
error, or `ParsedTrace.close()`; a worker killed mid-ingest leaves a folder that
`remove_stale_scratch` deletes later. A disk that fills while extracting raises
`DiskFullError` (the server's problem), never "archive is corrupt" (the user's).

Public surface: `extracted`, `is_archive`, `remove_stale_scratch`, `ArchiveMember`,
`SCRATCH_PREFIX`.
"""

from __future__ import annotations

import errno
import gzip
import shutil
import stat
import tarfile
import tempfile
import time
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from itertools import chain
from pathlib import Path, PurePosixPath
from typing import IO

from ingest._io import GZIP_MAGIC, read_head
from ingest._zip_directory import read_zip_directory
from ingest.errors import DiskFullError, ParseError, is_disk_full
from ingest.tools import REPORT_PREFIX

SCRATCH_PREFIX = "perfdash-archive-"

_ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")
_TAR_MAGIC_OFFSET = 257
_TAR_MAGIC = b"ustar"
_CHUNK = 1 << 20
# A central directory entry is 46 bytes plus its name and extra fields; real ones are under
# 200. The directory may average this much per allowed entry, so a directory of many tiny
# entries (which zipfile would parse whole into memory) is refused before it is read.
_MAX_DIRECTORY_BYTES_PER_ENTRY = 1024
# Long-name and pax headers are read into memory by tarfile; real ones are a few hundred bytes.
_MAX_TAR_META_BYTES = 1 << 20
_TAR_META_TYPES = frozenset(
    {tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK, tarfile.XHDTYPE, tarfile.XGLTYPE}
)


@dataclass(frozen=True, slots=True)
class ArchiveMember:
    """One extracted regular file: its POSIX path inside the archive and where it now lies."""

    name: str
    path: Path


def is_archive(path: Path) -> bool:
    """Return True when the file is a zip, a tar or a gzip-compressed tar (by content).

    A gzip file that is not a tar (``trace.json.gz``) is not an archive.
    """
    with path.open("rb") as f:
        magic = f.read(4)
    if magic in _ZIP_MAGICS:
        return True
    head = read_head(path, _TAR_MAGIC_OFFSET + len(_TAR_MAGIC))
    return head[_TAR_MAGIC_OFFSET:] == _TAR_MAGIC


@contextmanager
def extracted(
    path: Path,
    *,
    source: str,
    max_total_bytes: int,
    max_file_bytes: int,
    max_files: int = 10_000,
) -> Iterator[list[ArchiveMember]]:
    """Extract the regular files of an archive into a temporary folder, removed on exit.

    Args:
        path: a ``.zip``, ``.tar`` or ``.tar.gz`` file (recognised by content).
        source: the name the user knows the archive by; every error quotes it.
        max_total_bytes: cap on the sum of the extracted files' sizes (the scratch space).
        max_file_bytes: cap on one extracted file's size.
        max_files: cap on the number of entries (files and folders).

    Yields:
        The extracted files, in archive order.

    Raises:
        ParseError: not an archive, truncated or corrupt, an unsafe member (path traversal,
            absolute path, link, device), too many entries, a size cap exceeded, or no files.
        DiskFullError: the scratch disk filled up while extracting.
    """
    limits = _Limits(source, max_total_bytes, max_file_bytes, max_files)
    with tempfile.TemporaryDirectory(prefix=SCRATCH_PREFIX) as tmp:
        root = Path(tmp)
        with path.open("rb") as f:
            magic = f.read(4)
        if magic in _ZIP_MAGICS:
            members = _extract_zip(path, root, limits)
        elif is_archive(path):
            members = _extract_tar(path, root, limits, gzipped=magic[:2] == GZIP_MAGIC)
        else:
            raise ParseError("not a zip, tar or tar.gz archive", source=source)
        if not members:
            raise ParseError("the archive contains no files", source=source)
        yield members


class _Limits:
    """Counts entries and bytes across one archive and raises when a cap is passed."""

    def __init__(self, source: str, max_total: int, max_file: int, max_files: int) -> None:
        self.source = source
        self.max_total = max_total
        self.max_file = max_file
        self.max_files = max_files
        self.total = 0
        self.entries = 0
        self.names: set[str] = set()

    def error(self, message: str, member: str | None = None) -> ParseError:
        return ParseError(
            message, source=self.source, location=f"member {member!r}" if member else None
        )

    def count_entry(self, member: str) -> None:
        self.entries += 1
        if self.entries > self.max_files:
            raise self.error(f"the archive has more than {self.max_files} entries", member)

    def safe_name(self, raw: str) -> str:
        """Return the member's normalised POSIX path, refusing anything that could escape."""
        name = raw.replace("\\", "/")
        parts = [p for p in name.split("/") if p not in ("", ".")]
        if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
            raise self.error("absolute path in archive member", raw)
        if ".." in parts:
            raise self.error("path traversal ('..') in archive member", raw)
        if not parts or "\x00" in name:
            raise self.error("archive member has an invalid name", raw)
        clean = "/".join(parts)
        if clean in self.names:
            raise self.error("archive member appears twice", raw)
        self.names.add(clean)
        return clean

    def copy(self, src: IO[bytes], root: Path, name: str) -> ArchiveMember:
        """Stream one member to disk under `root`, counting bytes against both caps."""
        dest = root.joinpath(*PurePosixPath(name).parts)
        if not dest.resolve().is_relative_to(root.resolve()):
            raise self.error("archive member escapes the extraction folder", name)
        written = 0
        try:
            dest.parent.mkdir(parents=True, exist_ok=True)
            with dest.open("xb") as out:
                while chunk := src.read(_CHUNK):
                    written += len(chunk)
                    self.total += len(chunk)
                    if written > self.max_file:
                        raise self.error(
                            f"archive member is larger than the {self.max_file}-byte limit", name
                        )
                    if self.total > self.max_total:
                        raise self.error(
                            f"archive contents exceed the {self.max_total}-byte limit on "
                            "scratch space (setting PERFDASH_ARCHIVE_SCRATCH_BYTES)",
                            name,
                        )
                    out.write(chunk)
        except (FileExistsError, NotADirectoryError, IsADirectoryError) as e:
            raise self.error("archive member clashes with another member's path", name) from e
        return ArchiveMember(name=name, path=dest)


def _check_zip_directory(f: IO[bytes], limits: _Limits) -> None:
    """Refuse a central directory past the entry limit, by its end record, before
    `zipfile` reads it whole (the record's count and size are what zipfile will use)."""
    directory = read_zip_directory(f)
    if directory is None:
        return  # zipfile says what is wrong
    kind = "zip64 " if directory.zip64 else ""
    if directory.entries > limits.max_files:
        raise limits.error(
            f"the archive has more than {limits.max_files} entries (its {kind}end record "
            f"says {directory.entries})"
        )
    max_size = limits.max_files * _MAX_DIRECTORY_BYTES_PER_ENTRY
    if directory.size > max_size:
        raise limits.error(
            f"the archive's central directory is {directory.size} bytes (its {kind}end "
            f"record), more than {max_size} for at most {limits.max_files} entries"
        )


def _extract_zip(path: Path, root: Path, limits: _Limits) -> list[ArchiveMember]:
    members: list[ArchiveMember] = []
    current: str | None = None
    try:
        with path.open("rb") as f:
            _check_zip_directory(f, limits)
            with zipfile.ZipFile(f) as zf:
                for info in zf.infolist():
                    current = info.filename
                    limits.count_entry(current)
                    mode = info.external_attr >> 16
                    if stat.S_ISLNK(mode):
                        raise limits.error("links are not allowed in archives", current)
                    if info.is_dir() or stat.S_ISDIR(mode):
                        limits.safe_name(current)
                        continue
                    if stat.S_IFMT(mode) and not stat.S_ISREG(mode):
                        raise limits.error("only regular files are allowed in archives", current)
                    if info.flag_bits & 0x1:
                        raise limits.error("encrypted archive members are not supported", current)
                    name = limits.safe_name(current)
                    with zf.open(info) as src:
                        members.append(limits.copy(src, root, name))
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, OSError) as e:
        _raise_if_disk_full(e, limits.source)
        raise limits.error(f"zip archive is truncated or corrupt: {e}", current) from e
    return members


class _GuardedTarInfo(tarfile.TarInfo):
    """Refuses oversized pax/long-name headers, which tarfile would read into memory whole."""

    def _proc_member(self, tarfile_: tarfile.TarFile) -> tarfile.TarInfo:
        if self.type in _TAR_META_TYPES and self.size > _MAX_TAR_META_BYTES:
            raise tarfile.ReadError(f"{self.size}-byte tar metadata header")
        parent: Callable[[tarfile.TarFile], tarfile.TarInfo]
        parent = super()._proc_member  # type: ignore[misc]
        return parent(tarfile_)


def _extract_tar(path: Path, root: Path, limits: _Limits, *, gzipped: bool) -> list[ArchiveMember]:
    members: list[ArchiveMember] = []
    current: str | None = None
    with ExitStack() as stack:
        raw: IO[bytes] | gzip.GzipFile = stack.enter_context(path.open("rb"))
        if gzipped:
            raw = stack.enter_context(gzip.GzipFile(fileobj=raw, mode="rb"))
        try:
            tf = stack.enter_context(tarfile.open(fileobj=raw, mode="r|", tarinfo=_GuardedTarInfo))
            for info in tf:
                current = info.name
                limits.count_entry(current)
                if info.isdir():
                    limits.safe_name(current)
                    continue
                if info.issym() or info.islnk():
                    raise limits.error("links are not allowed in archives", current)
                if not info.isreg():
                    raise limits.error("only regular files are allowed in archives", current)
                name = limits.safe_name(current)
                src = tf.extractfile(info)
                if src is None:  # pragma: no cover - isreg() members always have data
                    raise limits.error("archive member has no data", current)
                members.append(limits.copy(src, root, name))
        except (tarfile.TarError, zlib.error, EOFError, OSError) as e:
            _raise_if_disk_full(e, limits.source)
            raise limits.error(f"tar archive is truncated or corrupt: {e}", current) from e
    return members


def _raise_if_disk_full(error: BaseException, source: str) -> None:
    if is_disk_full(error):
        raise DiskFullError(
            errno.ENOSPC,
            f"the server's disk is full while extracting {source} into "
            f"{tempfile.gettempdir()}; the upload is fine and the ingest will be retried",
        ) from error


def remove_stale_scratch(older_than_s: float, *, now: float | None = None) -> list[Path]:
    """Delete extraction folders (and vendor-tool export folders, `ingest.tools`) older than
    `older_than_s`, left by a worker that was killed mid-ingest; return those removed.

    Pass the ingest's hard time limit plus a grace: no live ingest is that old, so another
    worker's folder in a shared temporary directory is never touched.
    """
    cutoff = (time.time() if now is None else now) - older_than_s
    removed = []
    root = Path(tempfile.gettempdir())
    for folder in chain(root.glob(f"{SCRATCH_PREFIX}*"), root.glob(f"{REPORT_PREFIX}*")):
        try:
            if folder.is_dir() and not folder.is_symlink() and folder.stat().st_mtime < cutoff:
                shutil.rmtree(folder)
                removed.append(folder)
        except OSError:
            continue  # removed meanwhile, or not ours to remove
    return removed
