"""SLA status in the Prometheus text exposition format (0.0.4), written by hand.

Gauges per SLA: `perfdash_sla_status` (1 pass, 0 fail, -1 no data or never evaluated),
`perfdash_sla_observed` and `perfdash_sla_threshold` (when known), so Grafana and
Alertmanager can alert on ``perfdash_sla_status == 0``.

Public surface: `render_sla_metrics`.
"""

from sqlmodel import Session, col, select

from backend.models.slas import Sla, Verdict

_STATUS = {Verdict.PASS: 1, Verdict.FAIL: 0}


def _escape(value: str) -> str:
    r"""Escape a label value: backslash, double quote and newline.

    >>> _escape('a"b\\c')
    'a\\"b\\\\c'
    """
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(sla: Sla) -> str:
    pairs = {
        "sla": sla.name,
        "project": sla.project,
        "benchmark": sla.benchmark,
        "metric": sla.metric,
        "severity": sla.severity,
    }
    return ",".join(f'{k}="{_escape(str(v))}"' for k, v in pairs.items())


def render_sla_metrics(session: Session) -> str:
    """The `/metrics` body for every SLA."""
    slas = session.exec(select(Sla).order_by(col(Sla.name))).all()
    families = {
        "perfdash_sla_status": "SLA status: 1 pass, 0 fail, -1 no data.",
        "perfdash_sla_observed": "Last observed value of the SLA's statistic.",
        "perfdash_sla_threshold": "Threshold the last observation was judged against.",
    }
    lines: list[str] = []
    for name, help_text in families.items():
        lines += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge"]
        for sla in slas:
            value: float | None
            if name == "perfdash_sla_status":
                value = _STATUS.get(Verdict(sla.status), -1) if sla.status else -1
            else:
                value = sla.last_observed if name.endswith("observed") else sla.last_threshold
            if value is not None:
                lines.append(f"{name}{{{_labels(sla)}}} {float(value)!r}")
    return "\n".join(lines) + "\n"
