"""An in-tree PEP 517 build backend for `tests/bench/test_run_refs.py` (no setuptools).

Importing it writes the environment it was imported in (pip's build environment) to the
file named in the source tree's `MARKER`: the proof that this commit's code ran, and with
which variables. `build_wheel` zips `markpkg/` and its `perfdash.workloads` entry point.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import pathlib
import zipfile
from typing import Any

pathlib.Path(pathlib.Path("MARKER").read_text().strip()).write_text(json.dumps(dict(os.environ)))

_INFO = "markpkg-0.1.0.dist-info"
_META = {
    f"{_INFO}/METADATA": "Metadata-Version: 2.1\nName: markpkg\nVersion: 0.1.0\n",
    f"{_INFO}/WHEEL": "Wheel-Version: 1.0\nGenerator: markbackend\nRoot-Is-Purelib: true\n"
    "Tag: py3-none-any\n",
    f"{_INFO}/entry_points.txt": "[perfdash.workloads]\nenv-dump = markpkg.bench:dump\n",
}
WHEEL = "markpkg-0.1.0-py3-none-any.whl"


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def build_wheel(
    wheel_directory: str,
    config_settings: dict[str, Any] | None = None,
    metadata_directory: str | None = None,
) -> str:
    """The wheel of `markpkg`, written into `wheel_directory`; returns its file name."""
    files = {name: text.encode() for name, text in _META.items()}
    for path in sorted(pathlib.Path("markpkg").glob("*.py")):
        files[path.as_posix()] = path.read_bytes()
    record = [_record_line(n, d) for n, d in files.items()] + [f"{_INFO}/RECORD,,"]
    with zipfile.ZipFile(pathlib.Path(wheel_directory) / WHEEL, "w") as wheel:
        for name, data in files.items():
            wheel.writestr(name, data)
        wheel.writestr(f"{_INFO}/RECORD", "\n".join(record) + "\n")
    return WHEEL
