"""The environment pip and the benchmark process get: an allow-list, never the worker's.

The worker's environment holds perfdash's secrets (`PERFDASH_DATABASE_URL`, the broker
URL, tokens, cloud keys). What pip builds and what the benchmark runs is code from the
spec's repository, so it gets only what a GPU program needs: `PATH`, a `HOME` inside
the run's work folder, the locale and time zone, the library and Python paths, the
CUDA, NVIDIA, NCCL and ROCm variables, pip's own `PIP_*` settings (for pip only), and
the spec's own `env` (stored by an admin). Any name that looks like a secret is dropped
even when it matches a prefix (`CUDA_..._TOKEN`). This is not a sandbox: the code still
runs as the worker's user and can read its files (docs/SECURITY.md).

Public surface: `allowed_env`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

_NAMES = frozenset(
    {"PATH", "LANG", "LANGUAGE", "TZ", "TMPDIR", "LD_LIBRARY_PATH", "PYTHONPATH",
     "PYTHONHASHSEED", "OMP_NUM_THREADS", "MKL_NUM_THREADS"}
)  # fmt: skip
_PREFIXES = ("LC_", "CUDA_", "CUDNN_", "CUBLAS_", "NVIDIA_", "NCCL_", "NVTE_", "ROCM_",
             "ROCR_", "HIP_", "HSA_", "MIOPEN_", "TORCH_CUDA_ARCH_LIST")  # fmt: skip
_PIP = "PIP_"
_SECRET = re.compile(
    r"PERFDASH|DATABASE|BROKER|REDIS|CELERY|POSTGRES|TOKEN|SECRET|PASSW|CREDENTIAL|"
    r"_KEY|^AWS_|^AZURE_|^GOOGLE_|^GH_|^GITHUB_",
    re.IGNORECASE,
)


def _allowed(name: str, *, pip: bool) -> bool:
    if _SECRET.search(name):
        return False
    return name in _NAMES or name.startswith(_PREFIXES) or (pip and name.startswith(_PIP))


def allowed_env(
    workdir: Path,
    spec_env: Mapping[str, str],
    *,
    pip: bool = False,
    source: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The allow-listed part of `source` (the worker's environment), `HOME` in
    `workdir/home` (created), then the spec's own `env` on top; `PIP_*` with `pip`."""
    source = os.environ if source is None else source
    home = workdir / "home"
    home.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in source.items() if _allowed(k, pip=pip)}
    env.setdefault("PATH", os.defpath)
    return {**env, "HOME": str(home), **spec_env}
