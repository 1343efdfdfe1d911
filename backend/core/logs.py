"""Console logging of the `perfdash` commands: what perfdash does at INFO, routine chatter
kept off the terminal.

Alembic logs two lines per connection it opens ("Context impl ...", "Will assume ...") and
one per plugin it loads, so `perfdash token list` used to print about nine INFO lines before
its answer; only its "Running upgrade A -> B" lines, which say that something changed, are
kept. Access logs (uvicorn's line per request, and httpx's line per API call the mounted
dashboard makes) stay off unless `PERFDASH_ACCESS_LOG=true`.

Public surface: `configure_logging`, `set_access_log`.
"""

import logging

_ROUTINE = ("Context impl ", "Will assume ")
_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class _RoutineMigrationLines(logging.Filter):
    """Drops Alembic's per-connection lines; an applied migration's line passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(_ROUTINE)


def configure_logging(level: int = logging.INFO) -> None:
    """Log to stderr at `level`, without Alembic's routine lines or per-request lines."""
    logging.basicConfig(level=level, format=_FORMAT)
    logging.getLogger("alembic.runtime.plugins").setLevel(logging.WARNING)
    migration = logging.getLogger("alembic.runtime.migration")
    if not any(isinstance(f, _RoutineMigrationLines) for f in migration.filters):
        migration.addFilter(_RoutineMigrationLines())
    set_access_log(False)


def set_access_log(enabled: bool) -> None:
    """Show (or hide) the line per API call that the dashboard's HTTP client logs; uvicorn's
    own access log is switched by `uvicorn.run(access_log=...)`."""
    logging.getLogger("httpx").setLevel(logging.INFO if enabled else logging.WARNING)
