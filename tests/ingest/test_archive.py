"""Safe archive extraction: kinds by magic, nested folders, and every hostile shape refused."""

from __future__ import annotations

import gzip
import io
import os
import stat
import tarfile
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from ingest import parse_file
from ingest.archive import SCRATCH_PREFIX, extracted, is_archive, remove_stale_scratch
from ingest.errors import ParseError
from ingest.tools import REPORT_PREFIX

MiB = 1 << 20
FILES = {"run/a.csv": b"x,y\n1,2\n", "run/sub/b.json": b"{}", "top.txt": b"hello"}


def _zip(path: Path, files: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return path


def _tar_bytes(add: Callable[[tarfile.TarFile], None]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        add(tf)
    return buf.getvalue()


def _add_files(files: dict[str, bytes]) -> Callable[[tarfile.TarFile], None]:
    def add(tf: tarfile.TarFile) -> None:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))

    return add


def _extract(path: Path, **caps: int) -> dict[str, bytes]:
    kwargs = {"max_total_bytes": 10 * MiB, "max_file_bytes": 5 * MiB, **caps}
    with extracted(path, source=path.name, **kwargs) as members:
        for m in members:
            assert m.path.is_file()
        return {m.name: m.path.read_bytes() for m in members}


@pytest.mark.parametrize("kind", ["zip", "tar", "tar.gz"])
def test_extracts_nested_folders_by_content_not_name(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "upload.bin"  # the name says nothing; the magic bytes decide
    if kind == "zip":
        _zip(path, FILES)
    else:
        data = _tar_bytes(_add_files(FILES))
        path.write_bytes(gzip.compress(data) if kind == "tar.gz" else data)
    assert is_archive(path)
    assert _extract(path) == FILES


def test_folder_is_removed_on_exit_even_after_an_error(tmp_path: Path) -> None:
    path = _zip(tmp_path / "a.zip", FILES)
    with (
        pytest.raises(RuntimeError),
        extracted(path, source="a.zip", max_total_bytes=MiB, max_file_bytes=MiB) as members,
    ):
        folder = members[0].path.parents[1]
        raise RuntimeError("boom")
    assert not folder.exists()


def test_gzip_that_is_not_a_tar_is_not_an_archive(tmp_path: Path) -> None:
    path = tmp_path / "trace.json.gz"
    path.write_bytes(gzip.compress(b'{"traceEvents": []}'))
    assert not is_archive(path)
    with pytest.raises(ParseError, match=r"not a zip, tar or tar\.gz"):
        _extract(path)


@pytest.mark.parametrize(
    ("member", "message"),
    [
        ("../evil.txt", "path traversal"),
        ("run/../../evil.txt", "path traversal"),
        ("..\\evil.txt", "path traversal"),
        ("/etc/evil.txt", "absolute path"),
        ("C:/evil.txt", "absolute path"),
    ],
)
@pytest.mark.parametrize("kind", ["zip", "tar"])
def test_refuses_names_that_escape(tmp_path: Path, kind: str, member: str, message: str) -> None:
    path = tmp_path / f"bad.{kind}"
    files = {"ok.txt": b"fine", member: b"evil"}
    if kind == "zip":
        _zip(path, files)
    else:
        path.write_bytes(_tar_bytes(_add_files(files)))
    with pytest.raises(ParseError, match=message) as err:
        _extract(path)
    assert f"bad.{kind}" in str(err.value) and repr(member) in str(err.value)
    assert not (tmp_path / "evil.txt").exists()


@pytest.mark.parametrize("link_type", [tarfile.SYMTYPE, tarfile.LNKTYPE])
def test_tar_links_are_refused(tmp_path: Path, link_type: bytes) -> None:
    def add(tf: tarfile.TarFile) -> None:
        _add_files({"a.txt": b"a"})(tf)
        info = tarfile.TarInfo("link.txt")
        info.type = link_type
        info.linkname = "/etc/passwd"
        tf.addfile(info)

    path = tmp_path / "links.tar"
    path.write_bytes(_tar_bytes(add))
    with pytest.raises(ParseError, match="links are not allowed") as err:
        _extract(path)
    assert "'link.txt'" in str(err.value)


@pytest.mark.parametrize("dev_type", [tarfile.CHRTYPE, tarfile.BLKTYPE, tarfile.FIFOTYPE])
def test_tar_devices_are_refused(tmp_path: Path, dev_type: bytes) -> None:
    def add(tf: tarfile.TarFile) -> None:
        info = tarfile.TarInfo("dev/null")
        info.type = dev_type
        tf.addfile(info)

    path = tmp_path / "dev.tar"
    path.write_bytes(_tar_bytes(add))
    with pytest.raises(ParseError, match="only regular files"):
        _extract(path)


@pytest.mark.parametrize("mode", [stat.S_IFLNK | 0o777, stat.S_IFIFO | 0o644])
def test_zip_links_and_special_files_are_refused(tmp_path: Path, mode: int) -> None:
    path = tmp_path / "special.zip"
    with zipfile.ZipFile(path, "w") as zf:
        info = zipfile.ZipInfo("link")
        info.create_system = 3
        info.external_attr = mode << 16
        zf.writestr(info, "/etc/passwd")
    with pytest.raises(ParseError, match=r"links are not allowed|only regular files"):
        _extract(path)


@pytest.mark.parametrize("kind", ["zip", "tar.gz"])
def test_bomb_stops_at_the_per_file_cap(tmp_path: Path, kind: str) -> None:
    zeros = bytes(3 * MiB)  # compresses to a few KB
    path = tmp_path / f"bomb.{kind}"
    if kind == "zip":
        _zip(path, {"zeros.bin": zeros})
    else:
        path.write_bytes(gzip.compress(_tar_bytes(_add_files({"zeros.bin": zeros}))))
    assert path.stat().st_size < 64 * 1024
    with pytest.raises(ParseError, match="larger than the 1048576-byte limit") as err:
        _extract(path, max_file_bytes=MiB)
    assert "'zeros.bin'" in str(err.value)


def test_zip_with_lying_header_sizes_is_still_capped(tmp_path: Path) -> None:
    """The headers claim 16 bytes for 2 MiB of data: never more than claimed comes out."""
    path = _zip(tmp_path / "liar.zip", {"big.bin": bytes(2 * MiB)})
    data = bytearray(path.read_bytes())
    small = (16).to_bytes(4, "little")
    for sig, offset in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        at = data.find(sig)
        data[at + offset : at + offset + 4] = small
    path.write_bytes(bytes(data))
    with pytest.raises(ParseError, match="corrupt: Bad CRC-32"):
        _extract(path, max_file_bytes=MiB)


def test_total_cap_counts_all_members(tmp_path: Path) -> None:
    path = _zip(tmp_path / "many.zip", {f"f{i}.bin": bytes(MiB // 2) for i in range(5)})
    with pytest.raises(ParseError, match="exceed the 2097152-byte limit"):
        _extract(path, max_total_bytes=2 * MiB)


def test_too_many_files(tmp_path: Path) -> None:
    path = _zip(tmp_path / "many.zip", {f"f{i}.txt": b"x" for i in range(20)})
    with pytest.raises(ParseError, match="more than 10 entries"):
        _extract(path, max_files=10)


def test_oversized_pax_header_is_refused_before_it_is_read(tmp_path: Path) -> None:
    header = tarfile.TarInfo("././@PaxHeader")
    header.type = tarfile.XHDTYPE
    header.size = 64 * MiB
    block = header.tobuf(format=tarfile.USTAR_FORMAT)
    path = tmp_path / "pax.tar.gz"
    path.write_bytes(gzip.compress(block + bytes(64 * MiB)))
    with pytest.raises(ParseError, match="metadata header"):
        _extract(path)


@pytest.mark.parametrize("kind", ["zip", "tar", "tar.gz"])
def test_truncated_archives_are_clear_errors(tmp_path: Path, kind: str) -> None:
    payload = bytes(range(256)) * 4096
    path = tmp_path / f"cut.{kind}"
    if kind == "zip":
        _zip(path, {"data.bin": payload})
        full = path.read_bytes()
        path.write_bytes(full[: len(full) // 2] + full[-22:])  # keep the end record only
    else:
        data = _tar_bytes(_add_files({"data.bin": payload}))
        data = gzip.compress(data) if kind == "tar.gz" else data
        path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ParseError, match="truncated or corrupt") as err:
        _extract(path)
    assert f"cut.{kind}" in str(err.value)


@pytest.mark.parametrize("kind", ["zip", "tar.gz"])
def test_empty_archives_say_so(tmp_path: Path, kind: str) -> None:
    path = tmp_path / f"empty.{kind}"
    if kind == "zip":
        with zipfile.ZipFile(path, "w"):
            pass
    else:
        path.write_bytes(gzip.compress(_tar_bytes(lambda tf: tf.addfile(_dir("only-a-folder")))))
    assert is_archive(path)
    with pytest.raises(ParseError, match="contains no files"):
        _extract(path)


def _dir(name: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE
    return info


def test_duplicate_and_clashing_members_are_refused(tmp_path: Path) -> None:
    dup = tmp_path / "dup.tar"
    dup.write_bytes(_tar_bytes(_add_files({"a.txt": b"1", "./a.txt": b"2"})))
    with pytest.raises(ParseError, match="appears twice"):
        _extract(dup)
    clash = tmp_path / "clash.tar"
    clash.write_bytes(_tar_bytes(_add_files({"a": b"1", "a/b": b"2"})))
    with pytest.raises(ParseError, match="clashes"):
        _extract(clash)


def test_scratch_space_has_its_own_cap(tmp_path: Path) -> None:
    """Issue 25: scratch reached 8.1 GB per ingest when only MAX_DECOMPRESSED_BYTES bounded
    it; `scratch_bytes` (PERFDASH_ARCHIVE_SCRATCH_BYTES) caps the extracted total."""
    path = _zip(tmp_path / "big.zip", {"a.csv": b"x" * (2 * MiB)})
    with pytest.raises(ParseError, match="PERFDASH_ARCHIVE_SCRATCH_BYTES"):
        parse_file(path, max_bytes=64 * MiB, scratch_bytes=MiB)


def test_closing_an_unread_parse_removes_the_extracted_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ingest can fail between parsing and reading; `close()` (the ingest's `with`)
    removes the scratch folder then too, not only once the events are read."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    torch = Path(__file__).resolve().parents[1] / "data" / "torch"
    path = _zip(tmp_path / "run.zip", {"r0.pt.trace.json.gz": (torch / TRACE).read_bytes()})
    with parse_file(path) as parsed:
        assert parsed.header is not None
        assert len(list(scratch.iterdir())) == 1
    assert list(scratch.iterdir()) == []


TRACE = "h200_train_step.pt.trace.json.gz"


def test_stale_scratch_of_killed_ingests_is_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    names = (f"{SCRATCH_PREFIX}a", f"{REPORT_PREFIX}r", f"{SCRATCH_PREFIX}b", "x")
    old, report, fresh, other = (tmp_path / n for n in names)
    for folder in (old, report, fresh, other):
        (folder / "sub").mkdir(parents=True)
    hour_ago = time.time() - 3600
    for folder in (old, report, other):
        os.utime(folder, (hour_ago, hour_ago))
    assert sorted(remove_stale_scratch(600)) == sorted([old, report])
    assert not old.exists() and not report.exists() and fresh.exists() and other.exists()
