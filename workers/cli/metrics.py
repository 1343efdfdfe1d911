"""`perfdash push|sla`: the CI side of metrics and SLAs.

`push`, `sla apply` and `sla accept-baseline` talk to a server over HTTP with a token read
from an environment variable (never a flag, so it stays out of CI logs); tokens come from
`perfdash token create` (`workers/cli/auth.py`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import httpx

from workers.cli.http_retry import send_with_retry

EXIT_BREACH, EXIT_ERROR = 1, 2
_RUN_FLAGS = ("project", "commit", "branch", "run_id", "url_field", "benchmark")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `push` and `sla` commands to the `perfdash` parser."""
    push = sub.add_parser("push", help="push a metrics file and print the SLA verdicts")
    push.add_argument("file", type=Path)
    _server_args(push)
    push.add_argument("--format", default=None, help="default: detected from the content")
    for flag in ("project", "commit", "branch", "run-id", "benchmark"):
        push.add_argument(f"--{flag}", default=None, help="for formats that lack it")
    push.add_argument("--run-url", dest="url_field", default=None, help="link to the CI run")
    push.add_argument("--fail-on-breach", action="store_true", help="exit 1 if an SLA fails")
    push.add_argument("--json", action="store_true", help="print the server's answer as JSON")
    push.add_argument(
        "--dry-run",
        action="store_true",
        help="parse and check the file here and print the points it would store "
        "(benchmark, metric, unit, direction, value, n); send nothing",
    )
    push.set_defaults(handler=_push)

    sla = sub.add_parser("sla", help="SLA definitions").add_subparsers(
        required=True, metavar="ACTION"
    )
    apply = sla.add_parser("apply", help="upsert the SLAs of a YAML file and print the diff")
    apply.add_argument("file", type=Path)
    _server_args(apply)
    apply.add_argument("--dry-run", action="store_true", help="show the diff, change nothing")
    apply.set_defaults(handler=_sla_apply)
    accept = sla.add_parser(
        "accept-baseline",
        help="accept a commit's level as an SLA's new baseline (default: where its open "
        "regression began); who, when and why are recorded",
    )
    accept.add_argument("name", help="the SLA's name")
    accept.add_argument("--reason", required=True, help="why this level is the new normal")
    accept.add_argument("--commit", default=None, help="the commit (or a unique prefix)")
    _server_args(accept)
    accept.set_defaults(handler=_sla_accept)


def _server_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--url", default="http://127.0.0.1:8000", help="perfdash server")
    parser.add_argument("--token-env", default="PERFDASH_TOKEN", help="env var with the token")
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument(
        "--retries",
        type=int,
        default=8,
        help="resend this many times after a connection error or HTTP 429/502/503/504, "
        "waiting 0.5 s doubling to 30 s, or the server's Retry-After (default 8)",
    )


def _post(args: argparse.Namespace, path: str, body: Any, params: dict[str, Any]) -> Any:
    """POST to the server, resending on transient failures (pushes and SLA applies are
    idempotent); prints the error and returns None on failure."""
    return _call(args, "POST", path, json=body, params=params)


def _call(
    args: argparse.Namespace, method: str, path: str, *, retries: int | None = None, **kw: Any
) -> Any:
    """One API call with the token; prints the error and returns None on failure."""
    token = os.environ.get(args.token_env, "")
    if not token:
        print(f"perfdash: set ${args.token_env} to an API token", file=sys.stderr)
        return None
    try:
        with httpx.Client(timeout=args.timeout) as client:
            response = send_with_retry(
                client,
                method,
                args.url.rstrip("/") + path,
                retries=max(0, args.retries if retries is None else retries),
                headers={"Authorization": f"Bearer {token}"},
                **kw,
            )
    except httpx.HTTPError as e:
        print(f"perfdash: cannot reach {args.url}: {e}", file=sys.stderr)
        return None
    if response.is_error:
        _print_error(response)
        return None
    return response.json()


def _print_error(response: httpx.Response) -> None:
    try:
        detail = response.json().get("detail")
    except ValueError:
        detail = response.text
    print(f"perfdash: HTTP {response.status_code}", file=sys.stderr)
    if isinstance(detail, dict) and "problems" in detail:
        for problem in detail["problems"]:
            print(f"  {problem['path']}: {problem['message']}", file=sys.stderr)
    else:
        print(f"  {detail}", file=sys.stderr)


def _push(args: argparse.Namespace) -> int:
    try:
        doc = json.loads(args.file.read_text())
    except (OSError, ValueError) as e:
        print(f"perfdash: cannot read {args.file}: {e}", file=sys.stderr)
        return EXIT_ERROR
    params = {k.replace("url_field", "url"): getattr(args, k) for k in _RUN_FLAGS}
    if args.dry_run:
        return _dry_run(args, doc, {k: v for k, v in params.items() if v})
    params["format"] = args.format
    result = _post(args, "/api/v1/metrics", doc, {k: v for k, v in params.items() if v})
    if result is None:
        return EXIT_ERROR
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(verdict_table(result))
    breached = any(v["verdict"] == "fail" for v in result["verdicts"])
    return EXIT_BREACH if breached and args.fail_on_breach else 0


def _dry_run(args: argparse.Namespace, doc: Any, defaults: dict[str, str]) -> int:
    from backend.services.metrics import MetricDocumentError
    from workers.cli.push_preview import preview_push

    try:
        print(preview_push(doc, fmt=args.format, defaults=defaults))
    except MetricDocumentError as e:
        print(f"perfdash: {args.file} would be refused:", file=sys.stderr)
        for problem in e.problems:
            print(f"  {problem.path}: {problem.message}", file=sys.stderr)
        return EXIT_ERROR
    return 0


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.6g}"


def verdict_table(result: dict[str, Any]) -> str:
    """The push answer as a fixed-width table, one SLA per line."""
    head = f"{result['format']}: stored {result['stored']}, duplicates {result['duplicates']}"
    if not result["verdicts"]:
        return head + "\nno SLA covers these points"
    rows = [("VERDICT", "SLA", "SEVERITY", "OBSERVED", "THRESHOLD", "BASELINE", "NOTE")]
    for v in result["verdicts"]:
        note = v["details"].get("first_bad_commit", "")
        note = f"first bad commit {note}" if note else ""
        if v["verdict"] == "skipped":  # require_stable: the run is flagged
            note = str(v["details"].get("skipped", ""))
        rows.append(
            (
                v["verdict"].upper(),
                v["name"],
                v["severity"],
                _num(v["observed"]),
                _num(v["threshold"]),
                _num(v["baseline"]),
                note,
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return "\n".join([head, *lines])


def _sla_apply(args: argparse.Namespace) -> int:
    import yaml

    try:
        loaded = yaml.safe_load(args.file.read_text())
    except (OSError, yaml.YAMLError) as e:
        print(f"perfdash: cannot read {args.file}: {e}", file=sys.stderr)
        return EXIT_ERROR
    items = loaded.get("slas") if isinstance(loaded, dict) else loaded
    if not isinstance(items, list):
        print(f"perfdash: {args.file}: expected a list under 'slas:'", file=sys.stderr)
        return EXIT_ERROR
    params = {"dry_run": "true"} if args.dry_run else {}
    diff = _post(args, "/api/v1/slas/apply", items, params)
    if diff is None:
        return EXIT_ERROR
    for name in diff["created"]:
        print(f"+ {name}")
    for name, changes in diff["updated"].items():
        print(f"~ {name}")
        for field, (old, new) in changes.items():
            print(f"    {field}: {old!r} -> {new!r}")
    counts = {k: len(diff[k]) for k in ("created", "updated", "unchanged")}
    dry = " (dry run, nothing changed)" if args.dry_run else ""
    print(", ".join(f"{n} {k}" for k, n in counts.items()) + dry)
    return 0


def _sla_accept(args: argparse.Namespace) -> int:
    listed = _call(args, "GET", "/api/v1/slas", params={"limit": 5000})
    if listed is None:
        return EXIT_ERROR
    sla_id = next((s["id"] for s in listed["items"] if s["name"] == args.name), None)
    if sla_id is None:
        print(f"perfdash: no SLA named {args.name!r}", file=sys.stderr)
        return EXIT_ERROR
    body = {"reason": args.reason, "commit": args.commit}
    # Not idempotent (each call records an acceptance), so never resent.
    path = f"/api/v1/slas/{sla_id}/baseline-acceptances"
    accepted = _call(args, "POST", path, retries=0, json=body)
    if accepted is None:
        return EXIT_ERROR
    print(
        f"{accepted['sla_name']}: commit {accepted['commit']} is the new baseline, "
        f"accepted by {accepted['accepted_by']} at {accepted['accepted_at']}: {accepted['reason']}"
    )
    return 0
