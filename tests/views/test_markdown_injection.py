"""Hostile trace and kernel names cannot change the compare report's Markdown structure.

The report is read by a real CommonMark parser with GitHub's tables (markdown-it-py):
whatever the names hold, it has one heading of level 2, one table row per kernel with
six cells, no link, image or raw HTML, and each name comes back as the text of a code
span (with its control characters shown as escapes).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from markdown_it.token import Token

from backend.core.markdown_escape import code_span, visible_controls
from backend.models.analyses import ComparePublic, KernelDelta
from backend.services.analysis.compare import basis_note
from backend.services.analysis.compare_report import NAME_WIDTH, render_markdown

HOSTILE = [
    "k\n## INJECTED",
    "k\n\n![pixel](https://evil.example/p.png)",
    "k\r\n[click](https://evil.example)",
    "k\r# INJECTED",
    "k\u2028## INJECTED",
    "a|b",
    "k`` `\n<img src=x onerror=alert(1)>",
    "`",
    "``",
    " ` ",
    "k\\",
    "k\\|x",
    "\x00",
    "   ",
    "",
    "<script>alert(1)</script>",
    "k\u202egnp.exe",
]
_PARSER = MarkdownIt("commonmark").enable("table")


def _delta(name: str, status: str) -> KernelDelta:
    return KernelDelta(
        name=name, key=name, match="exact", names_a=[name], names_b=[name], count_a=1,
        count_b=1, total_ns_a=10, total_ns_b=20, a=10, b=20, delta=10, delta_pct=100.0,
        better=False, status=status,
    )  # fmt: skip


def _report(name: str) -> str:
    return render_markdown(
        ComparePublic(
            a="a", b="b", a_name=name, b_name=name, basis="per_step",
            basis_note=basis_note(1, 1), steps_a=1, steps_b=1, headline=[], metrics=[],
            categories=[], kernels=[_delta(name, "changed")], new_kernels=[_delta(name, "new")],
            gone_kernels=[], markdown="",
        )
    )  # fmt: skip


def _structure(text: str) -> tuple[list[str], list[Token]]:
    tokens = _PARSER.parse(text)
    inline = [child for t in tokens if t.type == "inline" for child in t.children or []]
    blocks = [t.tag for t in tokens if t.type.endswith("_open") and t.nesting == 1]
    return blocks, inline


def _check(name: str) -> None:
    text = _report(name)
    blocks, inline = _structure(text)
    assert blocks.count("h2") == 1 and blocks.count("h3") == 2 and "h1" not in blocks
    assert blocks.count("tr") == 2 and blocks.count("td") == 6  # header row + one kernel
    assert blocks.count("li") == 1
    kinds = {t.type for t in inline}
    assert not kinds & {"link_open", "image", "html_inline"}, kinds
    assert "html_block" not in {t.type for t in _PARSER.parse(text)}
    shown = visible_controls(name if len(name) <= NAME_WIDTH else name[: NAME_WIDTH - 1] + "…")
    spans = [t.content for t in inline if t.type == "code_inline"]
    assert spans == [shown or " "] * 4, spans  # heading A and B, table cell, list item


@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_name_stays_one_code_span(name: str) -> None:
    _check(name)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("`|\\\n\r \t#[]()!<>*_-=\u2028x"), max_size=30))
def test_any_name_of_markdown_characters_stays_one_code_span(name: str) -> None:
    _check(name)


def test_a_name_longer_than_the_column_is_cut_with_an_ellipsis() -> None:
    assert code_span("k" * 200, max_chars=NAME_WIDTH) == "`" + "k" * (NAME_WIDTH - 1) + "…`"
