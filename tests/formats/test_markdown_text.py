"""Stored strings are shown, never rendered, in every Markdown output.

Markup goes into every stored field a Markdown writer prints (set id, retriever, question ids,
hard classes, errors, flipped ids, lint findings, a leaderboard's names); each output is then
rendered by a CommonMark parser with raw HTML on (as GitHub renders a subset of it) and tables
and strikethrough enabled, and the page must hold no element made from data (no script, italic,
emphasis, code span, strikethrough, link or image) while every string reads back as text.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from store.builders import make_run, question

from retrieval_eval.config.models import Thresholds
from retrieval_eval.formats.markdown_text import md_fence, md_text
from retrieval_eval.lint.models import Finding, LintReport
from retrieval_eval.lint.render import render_markdown as lint_markdown
from retrieval_eval.reports.leaderboard import render_leaderboard
from retrieval_eval.reports.report import render
from retrieval_eval.store import Store, open_store
from retrieval_eval.verdicts.regression import detect_regression
from retrieval_eval.workflows.leaderboard import compare_runs

# what a stored string may hold: HTML, emphasis, code spans, links, strikethrough, table breaks
MARKUP = [
    "<script>alert(1)</script>",
    "<i>cls</i>",
    "q`tick`*star*_u_",
    "[link](http://example.com/x)",
    "![img](http://example.com/i.png)",
    "~~struck~~ a|b &amp; __bold__",
]
# elements only data could have made (the reports make strong, tables, details, pre/code)
FORBIDDEN = re.compile(r"<(script|i|em|code|del|s|a|img)[\s>]")
FENCED = re.compile(r"^(`{3,})\n.*?\n\1$", re.S | re.M)
PARSER = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])


def rendered(markdown: str) -> str:
    """The page GitHub would show, without the fenced blocks (inert: shown as they are)."""
    page = PARSER.render(markdown)
    return re.sub(r"<pre><code[^>]*>.*?</code></pre>", "", page, flags=re.S)


def page_text(page: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", page))


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with open_store(f"sqlite:///{tmp_path / 'results.sqlite'}") as opened:
        yield opened


def run_report(store: Store, markup: str, *, summary: bool) -> str:
    """A run of set ``markup`` by retriever ``markup`` whose question ids, hard class and error
    are markup, judged against a baseline where the first question was a hit (a flip)."""
    qs = [
        question(f"{markup}-1", False, hard_class=markup),
        question(f"{markup}-2", True, hard_class=markup),
        question(f"{markup}-3", False, error=f"backend said {markup}"),
    ]
    base = [question(f"{markup}-1", True, hard_class=markup), *qs[1:]]
    kwargs = {"set_identifier": markup, "retriever": markup, "max_error_rate": 0.5}
    old = make_run(base, **kwargs)  # type: ignore[arg-type]
    baseline_id = store.runs.save(old, detect_regression(old, None, Thresholds()))
    current = make_run(qs, day=1, **kwargs)  # type: ignore[arg-type]
    verdict = detect_regression(current, store.get_run(baseline_id), Thresholds())
    assert verdict.flipped_to_miss == [f"{markup}-1"]  # the verdict details name a markup id
    return render(current, "markdown", {"run_id": 2}, verdict=verdict, summary=summary)


def lint_report(store: Store, markup: str) -> str:
    finding = Finding(
        check=markup,
        severity="warning",
        question_ids=[markup, f"{markup}-2"],
        doc_ids=[markup],
        message=f"message {markup}",
    )
    report = LintReport(
        set_id=markup,
        questions=2,
        findings=[finding],
        checks_run=[markup],
        checks_skipped={markup: f"reason {markup}"},
    )
    return lint_markdown(report)


def leaderboard(store: Store, markup: str) -> str:
    runs = []
    for name, pattern in ((f"{markup}-a", "110"), (f"{markup}-b", "010")):
        qs = [question(f"{markup}-{i}", c == "1") for i, c in enumerate(pattern)]
        run = make_run(qs, set_identifier=markup, retriever=name)
        runs.append(store.get_run(store.runs.save(run, detect_regression(run, None, Thresholds()))))
    return render_leaderboard(compare_runs(runs), "markdown")


WRITERS: dict[str, Callable[[Store, str], str]] = {
    "run/show --format markdown": lambda store, m: run_report(store, m, summary=False),
    "headline / $GITHUB_STEP_SUMMARY": lambda store, m: run_report(store, m, summary=True),
    "sets lint --format markdown": lint_report,
    "compare --format markdown": leaderboard,
}


@pytest.mark.parametrize("markup", MARKUP)
@pytest.mark.parametrize("writer", WRITERS)
def test_markup_in_stored_strings_is_shown_not_rendered(
    store: Store, writer: str, markup: str
) -> None:
    markdown = WRITERS[writer](store, markup)
    page = rendered(markdown)
    assert FORBIDDEN.search(page) is None, page
    assert markup in page_text(page)  # shown, as it is
    if "<" in markup:  # no raw < from data reaches the Markdown outside a fenced block
        assert markup.split(">")[0] not in FENCED.sub("", markdown)
    if writer.startswith("run/show"):  # the verdict details: one intact block, data as text
        full = PARSER.render(markdown)
        assert full.count("<pre>") == 1
        assert f"{markup}-1" in html.unescape(re.search(r"<pre>(.*?)</pre>", full, re.S)[1])


def test_the_verdict_fence_outlasts_any_backticks_in_the_data() -> None:
    text = "id ```` with four\nand ``` three"
    fence, body, closing = md_fence(text)
    assert fence == closing == "`" * 5 and body == text
    assert PARSER.render("\n".join(md_fence(text))).count("<pre>") == 1
    assert md_fence("plain")[0] == "```"


@pytest.mark.parametrize(
    ("text", "escaped"),
    [
        ("handbook_bm25", "handbook_bm25"),  # an intraword _ opens no emphasis: left as it is
        ("_u_", "\\_u\\_"),
        ("a*b", "a\\*b"),
        ("[a](b) [c][d] [1, 2]", "[a\\](b) [c\\][d] [1, 2]"),
        ("a|b\nc\r", "a\\|b c "),
        ("<b>&", "&lt;b&gt;&amp;"),
        ("back\\slash `x` ~y~", "back\\\\slash \\`x\\` \\~y\\~"),
    ],
)
def test_md_text(text: str, escaped: str) -> None:
    assert md_text(text) == escaped
    assert (
        page_text(PARSER.render(escaped)).strip()
        == text.replace("\n", " ").replace("\r", " ").strip()
    )
