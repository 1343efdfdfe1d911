"""Names from traces and pushes, made safe to put into Markdown and Slack messages.

Kernel, trace, project and metric names are chosen by whoever uploads or pushes, and a
report is pasted where Markdown is rendered (a pull request, a wiki, Slack). A newline
in a name would end its line and start a heading, a link or an image of the uploader's
choosing, so every line break and other control character becomes a visible escape
(`\\n`, `\\x00`) first, and the rest is quoted for the target: a code span with a fence
longer than any backtick run inside (GitHub-flavoured tables also need `|` escaped), or
Slack's three entities. The one place that turns names into such text.

Public surface: `code_span`, `slack_text`, `visible_controls`.
"""

import re
import unicodedata

# Line breaks and controls (Cc), the Unicode line and paragraph separators, and the bidi
# embeddings, overrides and isolates that would make a name display as another one.
_BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_BACKTICK_RUN = re.compile(r"`+")


def _hidden(c: str) -> bool:
    return unicodedata.category(c) in ("Cc", "Zl", "Zp") or c in _BIDI


def _escape(c: str) -> str:
    if c in _NAMED:
        return _NAMED[c]
    return f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"


def visible_controls(text: str) -> str:
    """`text` on one line: control characters and line breaks as Python-style escapes.

    >>> visible_controls("a\\n## b\\x00c\\u2028")
    'a\\\\n## b\\\\x00c\\\\u2028'
    """
    return "".join(_escape(c) if _hidden(c) else c for c in text)


def code_span(text: str, *, max_chars: int | None = None, in_table: bool = False) -> str:
    """`text` as one Markdown code span that nothing in it can end early.

    Args:
        text: any string, from any user.
        max_chars: cut longer text to this many characters, the last one an ellipsis.
        in_table: escape `|`, which ends a GitHub-flavoured table cell even inside a span.

    >>> code_span("a`b"), code_span("`x`"), code_span("k\\n## INJECTED")
    ('``a`b``', '`` `x` ``', '`k\\\\n## INJECTED`')
    >>> code_span("a|b", in_table=True), code_span("")
    ('`a\\\\|b`', '` `')
    """
    if max_chars is not None and len(text) > max_chars:
        text = text[: max_chars - 1] + "…"
    body = visible_controls(text)
    if in_table:
        body = body.replace("|", "\\|")
    fence = "`" * (max((len(r) for r in _BACKTICK_RUN.findall(body)), default=0) + 1)
    if body.strip(" ") and (body[0] in "` " or body[-1] in "` "):
        body = f" {body} "  # CommonMark strips one space from each side of such a span
    body = body or " "
    return f"{fence}{body}{fence}"


def slack_text(text: str) -> str:
    """`text` for a Slack message: one line, and no mention, link or channel it could open.

    Slack reads `<...>` as a link or mention (`<!channel>`, `<https://x|click>`) and asks
    for `&`, `<` and `>` to be sent as entities; formatting marks cannot be escaped and
    are harmless.

    >>> slack_text("<!channel> a&b\\n:ok:")
    '&lt;!channel&gt; a&amp;b\\\\n:ok:'
    """
    text = visible_controls(text)
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


__all__ = ["code_span", "slack_text", "visible_controls"]
