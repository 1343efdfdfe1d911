"""Import rules: ingest <- backend <- workers; dashboard talks HTTP only; no torch on the server.

Walks every module's AST, so a forbidden import anywhere (even inside a function) fails.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
WEB_DB_QUEUE = {"sqlmodel", "sqlalchemy", "fastapi", "celery", "dash"}
FORBIDDEN: dict[str, set[str]] = {
    "ingest": {"backend", "workers", "dashboard", "torch", *WEB_DB_QUEUE},
    "backend": {"workers", "dashboard", "torch"},
    "dashboard": {"backend", "workers", "ingest", "sqlmodel", "sqlalchemy", "celery", "torch"},
}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_imports_flow_one_way(package: str) -> None:
    offenders = {
        str(path.relative_to(REPO)): sorted(_imports(path) & FORBIDDEN[package])
        for path in (REPO / package).rglob("*.py")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_workers_import_torch_only_in_the_benchmark_runner() -> None:
    offenders = [
        str(p.relative_to(REPO))
        for p in (REPO / "workers").rglob("*.py")
        if "torch" in _imports(p) and "bench" not in p.parts
    ]
    assert offenders == []
