"""Static checks of the container setup: ``docker-compose.yml``, ``Dockerfile``, ``.dockerignore``.

No Docker is needed. The files are parsed and checked against what they configure (the
``Settings`` fields, the CLI's subcommands, the packages in ``pyproject.toml``), so a
rename on either side fails here rather than in a deployment.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shlex
import subprocess
import sys
import threading
import tomllib
from collections.abc import Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from backend.core.bind import check_bind
from backend.core.config import Settings

ROOT = Path(__file__).resolve().parents[1]
COMPOSE_FILE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"
PYPROJECT = ROOT / "pyproject.toml"

ENV_PREFIX = "PERFDASH_"
APP_SERVICES = ("migrate", "api", "worker-ingest", "worker-webhooks", "worker-gpu")
# Webhook deliveries have workers of their own: a slow receiver never holds an ingest worker.
WORKER_QUEUES = {"worker-ingest": "ingest", "worker-webhooks": "webhooks", "worker-gpu": "gpu"}
ALL_SERVICES = ("postgres", "redis", *APP_SERVICES)
# The settings every app container needs to find the shared servers and blob store.
REQUIRED_ENV = (
    "PERFDASH_DATABASE_URL",
    "PERFDASH_BROKER_URL",
    "PERFDASH_DATA_DIR",
    "PERFDASH_STORAGE_DIR",
)
API_PORT = 8000


# --- compose helpers ----------------------------------------------------------------

_VARIABLE = re.compile(
    r"\$(?:(?P<escaped>\$)"
    r"|\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?+])(?P<arg>[^}]*))?\}"
    r"|(?P<bare>[A-Za-z_][A-Za-z0-9_]*))"
)


def interpolate(text: str, env: Mapping[str, str]) -> str:
    """Compose's ``$VAR``/``${VAR:-default}`` substitution, against ``env`` only.

    A variable that is unset in ``env`` and has no default is an error: the stack must
    come up with no ``.env`` file.
    """

    def substitute(match: re.Match[str]) -> str:
        if match["escaped"]:
            return "$"
        name = match["braced"] or match["bare"]
        op, arg = match["op"], match["arg"] or ""
        value = env.get(name)
        if op in (":-", "-"):
            unset = value is None or (op == ":-" and value == "")
            return arg if unset else str(value)
        if op in (":+", "+"):
            set_ = value is not None and (op == "+" or value != "")
            return arg if set_ else ""
        if value is None:
            raise AssertionError(f"${{{name}}} in {COMPOSE_FILE.name} has no default")
        return value

    return _VARIABLE.sub(substitute, text)


def interpolate_tree(node: Any, env: Mapping[str, str]) -> Any:
    """Interpolate every string value of a loaded YAML document."""
    if isinstance(node, str):
        return interpolate(node, env)
    if isinstance(node, list):
        return [interpolate_tree(item, env) for item in node]
    if isinstance(node, dict):
        return {key: interpolate_tree(value, env) for key, value in node.items()}
    return node


def load_compose(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    raw = yaml.safe_load(COMPOSE_FILE.read_text(encoding="utf-8"))
    assert isinstance(raw, dict), f"{COMPOSE_FILE.name} is not a mapping"
    loaded: dict[str, Any] = interpolate_tree(raw, env or {})
    return loaded


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return load_compose()


def service(compose: Mapping[str, Any], name: str) -> dict[str, Any]:
    services = compose.get("services")
    assert isinstance(services, dict), "compose file has no services mapping"
    svc = services.get(name)
    assert isinstance(svc, dict), f"service {name!r} is missing"
    return svc


def as_mapping(value: Any, what: str) -> dict[str, str]:
    """A compose ``KEY: value`` mapping or ``["KEY=value", ...]`` list, as a dict."""
    if value is None:
        return {}
    if isinstance(value, dict):
        return {str(k): "" if v is None else str(v) for k, v in value.items()}
    assert isinstance(value, list), f"{what} must be a mapping or a list"
    items = (str(item).partition("=") for item in value)
    return {key: val for key, _, val in items}


def environment(svc: Mapping[str, Any]) -> dict[str, str]:
    return as_mapping(svc.get("environment"), "environment")


def argv(command: Any) -> list[str]:
    """A compose ``command``/``test`` as an argv list, whether a string or a list."""
    if isinstance(command, str):
        return shlex.split(command)
    assert isinstance(command, list), f"unexpected command {command!r}"
    return [str(arg) for arg in command]


def option(args: list[str], name: str) -> str | None:
    """The value of ``--name value`` or ``--name=value`` in ``args``."""
    for i, arg in enumerate(args):
        if arg == name:
            assert i + 1 < len(args), f"{name} has no value in {args}"
            return args[i + 1]
        if arg.startswith(name + "="):
            return arg.removeprefix(name + "=")
    return None


def volume_mounts(svc: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(source, target)`` of each mount, from short or long volume syntax."""
    mounts = []
    for entry in svc.get("volumes") or []:
        if isinstance(entry, str):
            source, _, rest = entry.partition(":")
            target = rest.partition(":")[0] if rest else source
            mounts.append((source if rest else "", target))
        else:
            assert isinstance(entry, dict), f"unexpected volume entry {entry!r}"
            mounts.append((str(entry.get("source", "")), str(entry["target"])))
    return mounts


def healthcheck_argv(svc: Mapping[str, Any]) -> list[str]:
    """The healthcheck command as an argv, with CMD/CMD-SHELL unwrapped."""
    check = svc.get("healthcheck")
    assert isinstance(check, dict), "no healthcheck"
    assert not check.get("disable"), "healthcheck is disabled"
    test = check.get("test")
    if isinstance(test, str):
        return shlex.split(test)
    args = argv(test)
    assert args, "empty healthcheck test"
    assert args[0] in ("CMD", "CMD-SHELL"), f"healthcheck test {args[0]!r} runs nothing"
    if args[0] == "CMD-SHELL":
        return shlex.split(" ".join(args[1:]))
    return args[1:]


def depends_on(svc: Mapping[str, Any]) -> dict[str, str]:
    """``{service: condition}``; the list form means ``service_started``."""
    deps = svc.get("depends_on") or {}
    if isinstance(deps, list):
        return {str(name): "service_started" for name in deps}
    return {
        str(name): str((spec or {}).get("condition", "service_started"))
        for name, spec in deps.items()
    }


def build_args(svc: Mapping[str, Any]) -> dict[str, str]:
    build = svc.get("build")
    if not isinstance(build, dict):
        return {}
    return as_mapping(build.get("args"), "build.args")


def make_settings(**values: Any) -> Settings:
    """``Settings(**values)``, read as the app reads it (``PERFDASH_*`` env included).

    Passed through ``**`` because mypy, without the pydantic plugin, takes the fields
    declared as ``Field(<default>, ...)`` for required arguments.
    """
    return Settings(**values)


# --- compose tests ------------------------------------------------------------------


@pytest.mark.parametrize("name", ALL_SERVICES)
def test_service_is_defined(compose: dict[str, Any], name: str) -> None:
    service(compose, name)


def test_settings_read_the_perfdash_prefix() -> None:
    assert Settings.model_config.get("env_prefix") == ENV_PREFIX


@pytest.mark.parametrize("name", APP_SERVICES)
def test_perfdash_env_vars_are_settings_fields(compose: dict[str, Any], name: str) -> None:
    env = environment(service(compose, name))
    names = [key for key in env if key.startswith(ENV_PREFIX)]
    missing = [key for key in REQUIRED_ENV if key not in env]
    assert not missing, f"{name} lacks {missing}"
    unknown = [
        key for key in names if key.removeprefix(ENV_PREFIX).lower() not in Settings.model_fields
    ]
    assert not unknown, f"{name} sets {unknown}, which no Settings field reads"


@pytest.mark.parametrize("name", APP_SERVICES)
def test_env_is_valid_settings(
    compose: dict[str, Any], name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The container's environment, read by ``Settings`` exactly as the process will."""
    for key in list(os.environ):
        if key.startswith(ENV_PREFIX):
            monkeypatch.delenv(key)
    env = environment(service(compose, name))
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    settings = make_settings()
    assert settings.resolved_database_url.startswith("postgresql+psycopg://")
    assert settings.resolved_broker_url.startswith("redis://")
    assert settings.blob_dir == Path(env["PERFDASH_STORAGE_DIR"])


def test_app_services_share_the_same_settings(compose: dict[str, Any]) -> None:
    envs = {
        name: {key: environment(service(compose, name)).get(key) for key in REQUIRED_ENV}
        for name in APP_SERVICES
    }
    reference = envs["api"]
    for name, env in envs.items():
        assert env == reference, f"{name} differs from api: {env} != {reference}"


def test_blob_volume_is_shared(compose: dict[str, Any]) -> None:
    declared = compose.get("volumes") or {}
    mounts: dict[str, tuple[str, str]] = {}
    for name in APP_SERVICES:
        svc = service(compose, name)
        storage = PurePosixPath(environment(svc)["PERFDASH_STORAGE_DIR"])
        assert storage.is_absolute(), f"{name}: PERFDASH_STORAGE_DIR must be absolute"
        holding = [
            (source, target)
            for source, target in volume_mounts(svc)
            if PurePosixPath(target) in (storage, storage.parent)
        ]
        assert len(holding) == 1, f"{name}: no single mount at {storage} or its parent"
        source, target = holding[0]
        assert source in declared, f"{name}: {source!r} is not a named volume of the file"
        mounts[name] = (source, target)
    assert len(set(mounts.values())) == 1, f"blob mounts differ: {mounts}"


@pytest.mark.parametrize(("name", "queue"), sorted(WORKER_QUEUES.items()))
def test_worker_command(compose: dict[str, Any], name: str, queue: str) -> None:
    args = argv(service(compose, name).get("command"))
    assert args[:2] == ["perfdash", "worker"], args
    queues = option(args, "--queues")
    assert queues is not None, f"{name} does not pass --queues: {args}"
    assert queues.split(",") == [queue], f"{name} must consume only {queue!r}: {queues}"


def test_gpu_worker_runs_one_task_at_a_time(compose: dict[str, Any]) -> None:
    args = argv(service(compose, "worker-gpu").get("command"))
    assert option(args, "--concurrency") == "1", args


def test_ingest_worker_is_scaled_out(compose: dict[str, Any]) -> None:
    deploy = service(compose, "worker-ingest").get("deploy") or {}
    assert int(deploy.get("replicas", 1)) >= 2
    assert "container_name" not in service(compose, "worker-ingest"), "blocks --scale"


def test_gpu_worker_reserves_nvidia_gpus(compose: dict[str, Any]) -> None:
    deploy = service(compose, "worker-gpu").get("deploy") or {}
    devices = (deploy.get("resources") or {}).get("reservations", {}).get("devices") or []
    assert any(
        device.get("driver") == "nvidia" and "gpu" in (device.get("capabilities") or [])
        for device in devices
    ), f"no nvidia gpu reservation: {devices}"


@pytest.mark.parametrize("name", APP_SERVICES)
def test_only_the_gpu_worker_builds_the_bench_extra(compose: dict[str, Any], name: str) -> None:
    svc = service(compose, name)
    assert "build" in svc, f"{name} must build this repository's image"
    extras = [e.strip() for e in build_args(svc).get("EXTRAS", "").split(",") if e.strip()]
    assert ("bench" in extras) == (name == "worker-gpu"), f"{name}: EXTRAS={extras}"


def test_images_built_differently_have_different_tags(compose: dict[str, Any]) -> None:
    """Two builds under one tag would overwrite each other (torch in the API image)."""
    seen: dict[str, dict[str, str]] = {}
    for name in APP_SERVICES:
        svc = service(compose, name)
        image = svc.get("image")
        if image is None:
            continue
        args = build_args(svc)
        assert seen.setdefault(str(image), args) == args, f"{image} is built two ways"


@pytest.mark.parametrize("name", ("postgres", "redis", "api"))
def test_has_healthcheck(compose: dict[str, Any], name: str) -> None:
    args = healthcheck_argv(service(compose, name))
    expected = {"postgres": "pg_isready", "redis": "redis-cli", "api": "python"}[name]
    assert args[0] == expected or args[0].startswith(expected), args
    if name == "redis":
        assert "ping" in args


@pytest.mark.parametrize("name", APP_SERVICES)
def test_app_waits_for_healthy_servers(compose: dict[str, Any], name: str) -> None:
    deps = depends_on(service(compose, name))
    for server in ("postgres", "redis"):
        assert deps.get(server) == "service_healthy", f"{name} -> {server}: {deps}"


class _Healthz(BaseHTTPRequestHandler):
    status = 200

    def do_GET(self) -> None:
        self.send_response(self.status if self.path == "/healthz" else 404)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def healthz_server() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Healthz)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize(("status", "healthy"), [(200, True), (503, False)])
def test_api_healthcheck_probes_healthz(
    compose: dict[str, Any],
    healthz_server: ThreadingHTTPServer,
    status: int,
    healthy: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Run the API's healthcheck against a stand-in server answering ``status``."""
    args = healthcheck_argv(service(compose, "api"))
    assert args[:2] in (["python", "-c"], ["python3", "-c"]), f"slim has no curl: {args}"
    code = args[2]
    url = re.compile(rf"http://(?:127\.0\.0\.1|localhost):{API_PORT}/healthz")
    assert url.search(code), f"healthcheck does not probe /healthz on {API_PORT}: {code}"
    port = healthz_server.server_address[1]
    monkeypatch.setattr(_Healthz, "status", status)
    local = url.sub(f"http://127.0.0.1:{port}/healthz", code)
    result = subprocess.run([sys.executable, "-c", local], capture_output=True, timeout=30)
    assert (result.returncode == 0) == healthy, result.stderr.decode()


def test_migrate_upgrades_the_database_once_before_the_api_starts(
    compose: dict[str, Any],
) -> None:
    """A long re-ingest on upgrade (issue 17) runs in `migrate`, not under the api's
    healthcheck; the api starts only after it exited 0."""
    svc = service(compose, "migrate")
    assert argv(svc.get("command")) == ["perfdash", "db", "upgrade"]
    assert str(svc.get("restart", "no")) == "no", "a one-shot job must not be restarted"
    assert depends_on(service(compose, "api")).get("migrate") == "service_completed_successfully"
    assert svc.get("image") == service(compose, "api").get("image")


def test_api_command_serves_without_embedded_worker(compose: dict[str, Any]) -> None:
    svc = service(compose, "api")
    args = argv(svc.get("command"))
    assert args[:2] == ["perfdash", "serve"], args
    assert "--no-worker" in args
    assert option(args, "--host") == "0.0.0.0"
    assert int(option(args, "--port") or API_PORT) == API_PORT
    published = [str(port).rpartition(":")[2] for port in svc.get("ports") or []]
    assert str(API_PORT) in published, f"port {API_PORT} is not published: {published}"


@pytest.mark.parametrize("auth", [None, "proxy"])
def test_api_may_bind_its_host_with_its_settings(
    auth: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`serve` refuses a non-loopback host with auth off; the api container's must pass,
    with the compose default and with an operator's PERFDASH_AUTH on the host."""
    for key in list(os.environ):
        if key.startswith(ENV_PREFIX):
            monkeypatch.delenv(key)
    svc = service(load_compose({} if auth is None else {"PERFDASH_AUTH": auth}), "api")
    for key, value in environment(svc).items():
        monkeypatch.setenv(key, value)
    settings = make_settings()
    assert settings.auth == (auth or "password")
    check_bind(option(argv(svc.get("command")), "--host") or "127.0.0.1", settings)


@pytest.mark.parametrize("password", [None, "s3cret"])
def test_database_url_matches_postgres_service(password: str | None) -> None:
    env = {} if password is None else {"POSTGRES_PASSWORD": password}
    compose = load_compose(env)
    url = environment(service(compose, "api"))["PERFDASH_DATABASE_URL"]
    assert url.startswith("postgresql+psycopg://"), url
    assert make_settings(database_url=url).resolved_database_url == url
    parts = urlsplit(url)
    pg = environment(service(compose, "postgres"))
    assert parts.hostname == "postgres"
    assert (parts.port or 5432) == 5432
    assert parts.username == pg.get("POSTGRES_USER", "postgres")
    assert parts.password == pg["POSTGRES_PASSWORD"]
    assert parts.path.lstrip("/") == pg.get("POSTGRES_DB", parts.username)
    if password is not None:
        assert parts.password == password, "the URL ignores POSTGRES_PASSWORD"


def test_broker_is_the_redis_service(compose: dict[str, Any]) -> None:
    url = environment(service(compose, "api"))["PERFDASH_BROKER_URL"]
    assert url.startswith("redis://"), url
    assert make_settings(broker_url=url).resolved_broker_url == url
    assert urlsplit(url).hostname == "redis"


# --- Dockerfile ---------------------------------------------------------------------


def dockerfile_instructions() -> list[tuple[str, str]]:
    """``(INSTRUCTION, arguments)`` with comments dropped and continuations joined."""
    instructions: list[tuple[str, str]] = []
    pending = ""
    for line in DOCKERFILE.read_text(encoding="utf-8").splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        keyword, _, rest = (pending + stripped).partition(" ")
        instructions.append((keyword.upper(), rest.strip()))
        pending = ""
    assert not pending, "Dockerfile ends inside a continued line"
    return instructions


def expand_extras(word: str, extras: str) -> str:
    """Shell-expand ``$EXTRAS``, ``${EXTRAS}``, ``${EXTRAS:+w}``, ``${EXTRAS:-w}``."""
    pattern = re.compile(r"\$\{EXTRAS(?::([+-])((?:[^{}]|\{[^{}]*\})*))?\}|\$EXTRAS\b")

    def substitute(match: re.Match[str]) -> str:
        op, arg = match[1], match[2] or ""
        if op == "+":
            return expand_extras(arg, extras) if extras else ""
        if op == "-":
            return extras or expand_extras(arg, extras)
        return extras

    return pattern.sub(substitute, word)


def pip_install_targets(extras: str | None) -> list[str]:
    """What the Dockerfile's ``pip install`` commands install, in order.

    ``extras=None`` leaves ``$EXTRAS`` unexpanded; otherwise it is the build arg.
    """
    takes_value = {
        "-r",
        "--requirement",
        "-c",
        "--constraint",
        "-i",
        "--index-url",
        "--extra-index-url",
        "-f",
        "--find-links",
        "-t",
        "--target",
    }
    targets: list[str] = []
    for keyword, rest in dockerfile_instructions():
        if keyword != "RUN":
            continue
        lexer = shlex.shlex(rest, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        command: list[str] = []
        for token in [*lexer, ";"]:
            if token.strip(";&|"):
                command.append(token)
                continue
            words = command[2:] if command[:2] == ["python", "-m"] else command
            if words[:2] in (["pip", "install"], ["pip3", "install"]):
                args = iter(words[2:])
                for arg in args:
                    if arg in takes_value:
                        next(args, None)
                    elif not arg.startswith("-"):
                        targets.append(arg if extras is None else expand_extras(arg, extras))
            command = []
    return targets


def test_dockerfile_base_user_port_and_command() -> None:
    instructions = dockerfile_instructions()
    froms = [rest.split()[0] for keyword, rest in instructions if keyword == "FROM"]
    assert froms and froms[-1] == "python:3.11-slim", froms
    users = [rest for keyword, rest in instructions if keyword == "USER"]
    assert users, "the image runs as root"
    assert users[-1].split(":")[0] not in ("root", "0"), users[-1]
    exposed = [
        port for keyword, rest in instructions if keyword == "EXPOSE" for port in rest.split()
    ]
    assert f"{API_PORT}" in exposed or f"{API_PORT}/tcp" in exposed, exposed
    cmds = [rest for keyword, rest in instructions if keyword == "CMD"]
    assert cmds, "no CMD"
    cmd = json.loads(cmds[-1])
    assert cmd[:2] == ["perfdash", "serve"], cmd
    assert "--no-worker" in cmd and option(cmd, "--host") == "0.0.0.0", cmd


def test_dockerfile_declares_extras_arg_in_the_final_stage() -> None:
    instructions = dockerfile_instructions()
    last_from = max(i for i, (keyword, _) in enumerate(instructions) if keyword == "FROM")
    args = {
        i: rest
        for i, (keyword, rest) in enumerate(instructions)
        if keyword == "ARG"
        if rest.split("=")[0] == "EXTRAS" and i > last_from
    }
    assert args, "ARG EXTRAS must be declared after the last FROM to be visible in RUN"
    default = next(iter(args.values())).partition("=")[2].strip("\"'")
    assert default == "", f"EXTRAS must default to nothing, not {default!r}"
    first_use = min(
        i for i, (keyword, rest) in enumerate(instructions) if keyword == "RUN" and "EXTRAS" in rest
    )
    assert min(args) < first_use


def test_dockerfile_installs_the_project_without_torch_by_default() -> None:
    assert not [t for t in pip_install_targets(None) if "torch" in t.lower()], (
        "torch must come only from the bench extra, through EXTRAS"
    )
    default = pip_install_targets("")
    assert default and "." in default, f"the project is not installed: {default}"
    assert all(t == "." for t in default if t.startswith(".")), default
    gpu = pip_install_targets("bench")
    assert ".[bench]" in gpu, f"EXTRAS=bench does not install .[bench]: {gpu}"


def test_dockerfile_copies_every_package() -> None:
    pyproject = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    include = pyproject["tool"]["setuptools"]["packages"]["find"]["include"]
    packages = {pattern.rstrip("*").rstrip(".") for pattern in include}
    copied = {
        source.rstrip("/")
        for keyword, rest in dockerfile_instructions()
        if keyword == "COPY" and not rest.startswith("--from")
        for source in shlex.split(rest)[:-1]
        if not source.startswith("--")
    }
    needed = packages | {"pyproject.toml"}
    missing = [name for name in sorted(needed) if not any(fnmatch.fnmatch(name, c) for c in copied)]
    assert not missing, f"not copied into the image: {missing}"
    readme = pyproject["project"].get("readme")
    if isinstance(readme, str):
        assert any(fnmatch.fnmatch(readme, c) for c in copied), f"{readme} is not copied"


# --- .dockerignore ------------------------------------------------------------------


def dockerignored(name: str) -> bool:
    """Whether a top-level ``name`` is left out of the build context (last match wins)."""
    ignored = False
    for line in DOCKERIGNORE.read_text(encoding="utf-8").splitlines():
        pattern = line.strip()
        if not pattern or pattern.startswith("#"):
            continue
        negate = pattern.startswith("!")
        pattern = pattern.removeprefix("!").strip("/")
        if fnmatch.fnmatch(name, pattern):
            ignored = not negate
    return ignored


@pytest.mark.parametrize("name", [".venv", "var", ".git", "tests", ".mypy_cache", ".env"])
def test_dockerignore_leaves_out(name: str) -> None:
    assert dockerignored(name)


def test_dockerignore_keeps_what_the_dockerfile_copies() -> None:
    sources = {
        source.rstrip("/").rstrip("*")
        for keyword, rest in dockerfile_instructions()
        if keyword == "COPY" and not rest.startswith("--from")
        for source in shlex.split(rest)[:-1]
    }
    ignored = [name for name in sorted(sources) if dockerignored(name)]
    assert not ignored, f".dockerignore leaves out what the Dockerfile copies: {ignored}"
