"""A Slack alert's text cannot be steered by the names a CI job pushes.

Project, benchmark and metric names come from any token with `metrics:write`; in Slack
`<!channel>` pings everyone, `<https://x|text>` is a disguised link, and a newline starts
a line that can pass for another alert.
"""

from __future__ import annotations

from backend.models.slas import Rule, Severity, SlaVerdict, Verdict
from backend.models.webhooks import WebhookKind
from backend.services.slas.alerts import build_payload


def _verdict(**names: str) -> SlaVerdict:
    fields = {"name": "p99", "project": "proj", "benchmark": "bench", "metric": "lat"} | names
    return SlaVerdict(
        sla_id="s1", severity=Severity.CRITICAL, rule=Rule.ABSOLUTE, verdict=Verdict.FAIL,
        observed=2.0, threshold=1.0, baseline=None, previous=Verdict.PASS,
        details={"first_bad_commit": "abc<!here>"}, **fields,
    )  # fmt: skip


def test_slack_text_has_no_mention_link_or_extra_line() -> None:
    verdict = _verdict(
        name="p99\n:large_green_circle: *p99* sla recovered",
        project="<!channel>",
        benchmark="<https://evil.example|open the report>",
        metric="a&b",
    )
    text = build_payload("sla_failed", verdict, WebhookKind.SLACK)["text"]
    assert "\n" not in text and "<" not in text and ">" not in text
    assert "&lt;!channel&gt;/&lt;https://evil.example|open the report&gt;/a&amp;b" in text
    assert "*p99\\n:large_green_circle: *p99* sla recovered*" in text
    assert "`abc&lt;!here&gt;`" in text


def test_the_json_payload_keeps_the_names_as_they_are() -> None:
    verdict = _verdict(project="<!channel>\n")
    assert build_payload("sla_failed", verdict, WebhookKind.JSON)["project"] == "<!channel>\n"
