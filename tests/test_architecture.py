"""Import rules: ingest <- backend <- workers; dashboard talks HTTP only; no torch on the server;
one package per noun in backend/services, each used through its `__init__`, every import
between them pointing down the declared order.

Walks every module's AST, so a forbidden import anywhere (even inside a function) fails. Each
checker is a function of source text, and is tried on a synthetic violation below, so a rule
that stops catching anything fails too.
"""

from __future__ import annotations

import ast
import functools
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SERVICES = REPO / "backend" / "services"
WEB_DB_QUEUE = {"sqlmodel", "sqlalchemy", "fastapi", "celery", "dash"}
FORBIDDEN: dict[str, set[str]] = {
    "ingest": {"backend", "workers", "dashboard", "torch", *WEB_DB_QUEUE},
    "backend": {"workers", "dashboard", "torch"},
    "dashboard": {"backend", "workers", "ingest", "sqlmodel", "sqlalchemy", "celery", "torch"},
}

# The modules backend/services keeps flat: shared by every package, or above them all.
FLAT_SERVICES = {"errors", "prometheus"}
# Each service package (and flat module) with the ones it may import. Every arrow points
# down (the map is acyclic, tested), so no import cycle can form between packages: loading
# sits above timeline and traces, series below slas, slas below metrics below benchmarks.
SERVICE_DEPENDENCIES: dict[str, set[str]] = {
    "errors": set(),
    "prometheus": set(),
    "outbox": set(),
    "auth": {"errors"},
    "datasets": {"errors"},
    "traces": {"datasets", "errors"},
    "series": {"errors"},
    "timeline": {"datasets", "traces", "errors"},
    "analysis": {"datasets", "timeline", "traces", "errors"},
    "loading": {"analysis", "datasets", "timeline", "traces", "errors"},
    "query": {"datasets", "traces", "errors"},
    "slas": {"series", "outbox", "errors"},
    "metrics": {"slas", "series", "outbox", "errors"},
    "benchmarks": {"metrics", "slas", "series", "outbox", "errors"},
}
# HTTP clients: in the dashboard only its API client modules may hold one.
HTTP_CLIENTS = {"httpx", "requests", "urllib3", "aiohttp", "http.client", "urllib.request"}


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


# --- the checkers: source text in, violations out -------------------------------------


@dataclass(frozen=True, slots=True)
class Module:
    """A module's dotted name and source; `package` when it is an `__init__.py`."""

    name: str
    source: str
    package: bool = False

    @property
    def unit(self) -> str | None:
        """The service package or flat service module this module belongs to, if any."""
        parts = self.name.split(".")
        return parts[2] if parts[:2] == ["backend", "services"] and len(parts) > 2 else None


@dataclass(frozen=True, slots=True)
class Import:
    """One imported module, and the names taken from it (none for `import x`)."""

    module: str
    names: tuple[str, ...]
    asnames: tuple[str, ...]
    line: int


@functools.cache
def _parse(source: str) -> ast.Module:
    return ast.parse(source)


def module_of(path: Path) -> Module:
    rel = path.relative_to(REPO).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return Module(".".join(parts), path.read_text(), package=rel.name == "__init__")


def imports_in(module: Module) -> Iterator[Import]:
    """Every import of the module, anywhere in it, relative ones made absolute."""
    for node in ast.walk(_parse(module.source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(alias.name, (), (), node.lineno)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.name.split(".")
                anchor = anchor if module.package else anchor[:-1]
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            names = tuple(a.name for a in node.names)
            asnames = tuple(a.asname or a.name for a in node.names)
            yield Import(base, names, asnames, node.lineno)


def _service_units(imp: Import) -> set[str]:
    """The service packages and flat modules an import reaches."""
    parts = imp.module.split(".")
    if parts[:2] != ["backend", "services"]:
        return set()
    if len(parts) > 2:
        return {parts[2]}
    return set(imp.names)  # from backend.services import traces, slas


def layer_violations(module: Module, allowed: dict[str, set[str]]) -> list[str]:
    """Imports of one service package from another that the dependency map does not allow."""
    own = module.unit
    if own is None:
        return []
    return [
        f"{module.name}:{imp.line} {own} -> {unit}"
        for imp in imports_in(module)
        for unit in sorted(_service_units(imp) - {own})
        if unit not in allowed.get(own, set())
    ]


def _attributes_of(source: str, name: str) -> set[str]:
    tree = _parse(source)
    return {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == name
    }


def surface_uses(
    module: Module, exports: dict[str, set[str]], modules: dict[str, set[str]] | None = None
) -> tuple[dict[str, set[str]], list[str]]:
    """What the module takes from other service packages, by package, and the ways it goes
    around their `__init__` (a submodule, a name not exported), or, inside a package,
    through its own `__init__` for anything but a sibling module (`modules`: each
    package's module names)."""
    used: dict[str, set[str]] = {}
    problems: list[str] = []
    own = module.unit
    for imp in imports_in(module):
        parts = imp.module.split(".")
        if parts[:2] != ["backend", "services"]:
            continue
        where = f"{module.name}:{imp.line}"
        if len(parts) == 2:  # from backend.services import traces [as t]
            for name, asname in zip(imp.names, imp.asnames, strict=True):
                if name not in exports:
                    continue  # a flat module
                if name == own:
                    problems.append(f"{where} imports its own package; import the module")
                    continue
                attrs = _attributes_of(module.source, asname)
                used.setdefault(name, set()).update(attrs)
                problems += [
                    f"{where} uses {name}.{a}, which {name}/__init__ does not export"
                    for a in sorted(attrs - exports[name])
                ]
            continue
        package = parts[2]
        if package not in exports or (package == own and len(parts) > 3):
            continue  # a flat module, or a sibling by its module path
        if package == own:
            siblings = (modules or {}).get(package, set())
            if not module.package and not set(imp.names) <= siblings:
                problems.append(f"{where} imports its own package's __init__; import the module")
            continue
        if len(parts) > 3 or not imp.names:
            problems.append(f"{where} imports {imp.module}; use backend.services.{package}")
            continue
        used.setdefault(package, set()).update(imp.names)
        problems += [
            f"{where} imports {package}.{n}, which {package}/__init__ does not export"
            for n in imp.names
            if n not in exports[package]
        ]
    return used, problems


def declared_exports(init: Module) -> tuple[set[str], set[str]]:
    """A package `__init__`'s `__all__`, and the names it imports from its own modules."""
    declared: set[str] = set()
    for node in _parse(init.source).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            declared = set(ast.literal_eval(node.value))
    imported = {
        asname
        for imp in imports_in(init)
        if imp.module.startswith(f"{init.name}.")
        for asname in imp.asnames
    }
    return declared, imported


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """A cycle of the graph as a path (first node repeated at the end), or []."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(node: str, path: list[str]) -> list[str]:
        state[node] = 1
        for nxt in sorted(graph.get(node, set())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], node, nxt] if nxt in path else [node, nxt]
            if nxt not in state and (cycle := visit(nxt, [*path, node])):
                return cycle
        state[node] = 2
        return []

    for start in sorted(graph):
        if start not in state and (cycle := visit(start, [])):
            return cycle
    return []


def module_graph(modules: list[Module]) -> dict[str, set[str]]:
    """The project modules each module imports, anywhere in it: inside functions and
    ``TYPE_CHECKING`` blocks too, since such a cycle is one refactor from an import error."""
    names = {m.name for m in modules}
    graph: dict[str, set[str]] = {}
    for module in modules:
        deps: set[str] = set()
        for imp in imports_in(module):
            subs = [f"{imp.module}.{n}" for n in imp.names if f"{imp.module}.{n}" in names]
            targets = subs if subs and len(subs) == len(imp.names) else [*subs, imp.module]
            for target in targets:
                while target and target not in names:
                    target = target.rpartition(".")[0]
                if target and target != module.name:
                    deps.add(target)
        graph[module.name] = deps
    return graph


def http_violations(module: Module) -> list[str]:
    """An HTTP client import, or an `/api/v1` address, in a dashboard module outside
    dashboard/api/."""
    if not module.name.startswith("dashboard.") or module.name.startswith("dashboard.api"):
        return []
    found = [
        f"{module.name}:{imp.line} imports {imp.module}"
        for imp in imports_in(module)
        if imp.module in HTTP_CLIENTS or imp.module.split(".")[0] in HTTP_CLIENTS
    ]
    tree = _parse(module.source)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    found += [
        f"{module.name}:{node.lineno} names the API address {node.value!r}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and "/api/v1" in node.value
        and id(node) not in docstrings
    ]
    return found


def cli_violations(root: Path) -> list[str]:
    """CLI modules outside workers/cli/: a `cli*.py` module or a `cli` package elsewhere,
    or an argparse parser outside workers/cli/ (workers/bench/ excepted: its workloads are
    scripts the benchmark runner starts as processes of their own)."""
    found = []
    for top in ("backend", "workers", "ingest", "dashboard"):
        for path in sorted((root / top).rglob("*.py")):
            rel = path.relative_to(root)
            in_cli = rel.parts[:2] == ("workers", "cli")
            named_cli = path.stem == "cli" or path.stem.startswith("cli_")
            if not in_cli and ("cli" in rel.parts[:-1] or named_cli):
                found.append(f"{rel} is a CLI module outside workers/cli/")
            if in_cli or rel.parts[:2] == ("workers", "bench"):
                continue
            if "argparse" in path.read_text() and "argparse" in _imports(path):
                found.append(f"{rel} parses a command line outside workers/cli/")
    return found


# --- the rules, on the code --------------------------------------------------------------


def _modules(*tops: str) -> list[Module]:
    return [module_of(p) for top in tops for p in sorted((REPO / top).rglob("*.py"))]


def _packages() -> list[str]:
    return sorted(p.name for p in SERVICES.iterdir() if (p / "__init__.py").exists())


def _submodules() -> dict[str, set[str]]:
    return {name: {p.stem for p in (SERVICES / name).glob("*.py")} for name in _packages()}


def _exports() -> dict[str, set[str]]:
    return {
        name: declared_exports(module_of(SERVICES / name / "__init__.py"))[0]
        for name in _packages()
    }


def test_backend_services_keeps_only_packages_and_two_flat_modules() -> None:
    flat = {p.stem for p in SERVICES.glob("*.py")} - {"__init__"}
    assert flat == FLAT_SERVICES


def test_the_dependency_map_names_every_package_and_points_down() -> None:
    assert set(SERVICE_DEPENDENCIES) == set(_packages()) | FLAT_SERVICES
    assert find_cycle(SERVICE_DEPENDENCIES) == []


def test_service_packages_import_only_what_the_map_allows() -> None:
    offenders = [
        v for m in _modules("backend/services") for v in layer_violations(m, SERVICE_DEPENDENCIES)
    ]
    assert offenders == []


def test_code_outside_a_package_uses_only_its_init() -> None:
    exports = _exports()
    modules = _submodules()
    offenders = [
        p for m in _modules("backend", "workers") for p in surface_uses(m, exports, modules)[1]
    ]
    assert offenders == []


def test_each_package_exports_exactly_the_names_other_packages_use() -> None:
    exports = _exports()
    used: dict[str, set[str]] = {name: set() for name in exports}
    for module in _modules("backend", "workers"):
        for package, names in surface_uses(module, exports)[0].items():
            used[package] |= names
    for package in exports:
        init = module_of(SERVICES / package / "__init__.py")
        declared, imported = declared_exports(init)
        submodules = {p.stem for p in (SERVICES / package).glob("*.py")}
        assert declared == imported, f"{package}: __all__ must list what __init__ imports"
        assert declared == used[package], f"{package}: __all__ vs names used outside it"
        assert not declared & submodules, f"{package}: an export hides a module of that name"


def test_the_cli_lives_in_workers_cli() -> None:
    assert cli_violations(REPO) == []
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert all(target.startswith("workers.cli.") for target in scripts.values())


def test_the_dashboard_calls_the_api_only_from_dashboard_api() -> None:
    assert [v for m in _modules("dashboard") for v in http_violations(m)] == []


# --- each checker catches a synthetic violation ------------------------------------------

EXPORTS = {"traces": {"get_trace"}, "slas": {"evaluate_run"}, "series": {"median"}}


def test_a_package_importing_upwards_is_caught_even_inside_a_function() -> None:
    source = "def f():\n    from backend.services.slas import evaluate_run\n"
    module = Module("backend.services.series.reads", source)
    assert layer_violations(module, SERVICE_DEPENDENCIES) == [
        "backend.services.series.reads:2 series -> slas"
    ]
    down = Module("backend.services.slas.rules", "from backend.services.series import median\n")
    assert layer_violations(down, SERVICE_DEPENDENCIES) == []


def test_no_two_modules_import_each_other_even_indirectly() -> None:
    graph = module_graph(_modules("ingest", "backend", "workers", "dashboard"))
    assert find_cycle(graph) == []


def test_an_import_cycle_is_found_through_a_function_or_type_checking_import() -> None:
    modules = [
        Module("ingest.a", "from ingest.b import helper\n"),
        Module(
            "ingest.b",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ingest.c import C\n",
        ),
        Module("ingest.c", "def f():\n    from ingest import a\n"),
        Module("ingest", "", package=True),
    ]
    graph = module_graph(modules)
    assert find_cycle(graph) == ["ingest.a", "ingest.b", "ingest.c", "ingest.a"]
    graph["ingest.c"] = set()
    assert find_cycle(graph) == []


def test_a_cycle_in_the_map_is_found() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize(
    ("name", "source", "problem"),
    [
        (
            "backend.api.routes.x",
            "from backend.services.traces.lifecycle import get_trace\n",
            "imports backend.services.traces.lifecycle; use backend.services.traces",
        ),
        (
            "workers.tasks.x",
            "def f():\n    import backend.services.traces.lifecycle\n",
            "imports backend.services.traces.lifecycle; use backend.services.traces",
        ),
        (
            "backend.services.slas.x",
            "from backend.services.series import percentile\n",
            "imports series.percentile, which series/__init__ does not export",
        ),
        (
            "backend.api.routes.x",
            "from backend.services import traces\ntraces.lifecycle.get_trace()\n",
            "uses traces.lifecycle, which traces/__init__ does not export",
        ),
        (
            "backend.services.traces.x",
            "from backend.services.traces import get_trace\n",
            "imports its own package's __init__; import the module",
        ),
    ],
)
def test_going_around_a_package_init_is_caught(name: str, source: str, problem: str) -> None:
    _, problems = surface_uses(Module(name, source), EXPORTS)
    assert [p.split(" ", 1)[1] for p in problems] == [problem]


def test_names_taken_through_an_init_are_counted_as_used() -> None:
    source = (
        "from backend.services import traces as t\n"
        "from backend.services.slas import evaluate_run\n"
        "t.get_trace()\n"
    )
    used, problems = surface_uses(Module("workers.x", source), EXPORTS)
    assert (used, problems) == ({"traces": {"get_trace"}, "slas": {"evaluate_run"}}, [])
    siblings = {"traces": {"states", "lifecycle"}}
    for source in (
        "from backend.services.traces.states import a\n",
        "from backend.services.traces import states\n",
    ):
        sibling = Module("backend.services.traces.x", source)
        assert surface_uses(sibling, EXPORTS, siblings) == ({}, [])


def test_exports_are_read_from_all_and_from_the_init_imports() -> None:
    init = Module(
        "backend.services.traces",
        'from backend.services.traces.lifecycle import get_trace\n__all__ = ["get_trace", "x"]\n',
        package=True,
    )
    assert declared_exports(init) == ({"get_trace", "x"}, {"get_trace"})


def test_a_dashboard_page_calling_the_api_itself_is_caught() -> None:
    page = Module(
        "dashboard.pages.x",
        '"""Reads /api/v1/traces."""\nimport httpx\nURL = "/api/v1/traces"\n',
    )
    assert http_violations(page) == [
        "dashboard.pages.x:2 imports httpx",
        "dashboard.pages.x:3 names the API address '/api/v1/traces'",
    ]
    client = Module("dashboard.api.client", "import httpx\n")
    assert http_violations(client) == []


def test_a_cli_module_outside_workers_cli_is_caught(tmp_path: Path) -> None:
    for rel in ("workers/cli/main.py", "workers/cli_extra.py", "backend/tool.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("import argparse\n")
    for top in ("ingest", "dashboard"):
        (tmp_path / top).mkdir()
    assert cli_violations(tmp_path) == [
        "backend/tool.py parses a command line outside workers/cli/",
        "workers/cli_extra.py is a CLI module outside workers/cli/",
        "workers/cli_extra.py parses a command line outside workers/cli/",
    ]
