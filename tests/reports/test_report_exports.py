"""Reports people act on: the headline in every format, CSV, trec_eval -q lines, the HTML file."""

from __future__ import annotations

import csv
import io
import json
import math
from datetime import UTC, datetime
from html.parser import HTMLParser

import pytest
from store.builders import as_stored, hits, make_run, question

from retrieval_eval.config.models import Thresholds
from retrieval_eval.evaluation.aggregate import summarise
from retrieval_eval.evaluation.metrics import per_question
from retrieval_eval.evaluation.results import QuestionResult, RunResult, RunSettings
from retrieval_eval.golden.models import QuestionForm
from retrieval_eval.reports.csv import render_csv, render_per_query
from retrieval_eval.reports.headline import headline_document
from retrieval_eval.reports.html import render_html
from retrieval_eval.reports.markdown import render_markdown
from retrieval_eval.reports.report import render
from retrieval_eval.reports.verdict import verdict_document, verdict_summary
from retrieval_eval.store.models import StoredRun
from retrieval_eval.verdicts.regression import Verdict, detect_regression

# -- the headline ----------------------------------------------------------------------------


def _compared(state_after: list[bool]) -> tuple[RunResult, Verdict]:
    before = hits(8, 10)
    after = [question(q.id, hit) for q, hit in zip(before, state_after, strict=True)]
    current = make_run(after, day=1)
    return current, detect_regression(current, as_stored(make_run(before), run_id=4), Thresholds())


REGRESSED = [False] * 5 + [True] * 4 + [False]  # 5 hit→miss, 1 miss→hit: -40 pts


def test_markdown_starts_with_the_badge_rates_deltas_and_flips() -> None:
    current, verdict = _compared(REGRESSED)
    text = render(current, "markdown", {"run_id": 5}, verdict=verdict)
    first, _, rest = text.partition("\n")
    assert first == "**❌ regression** · demo.set × bm25, run 5 vs baseline run 4"
    low, high = verdict.top1_delta_ci  # type: ignore[misc]
    assert (
        f"| top-1 | 40.0% (4/10) | [16.8%, 68.7%] | -40.0 pts | "
        f"[{low * 100:+.1f}, {high * 100:+.1f}] pts |" in rest
    )
    assert (
        "Flipped questions: 6 at top-1 (5 hit→miss, 1 miss→hit; McNemar exact p = 0.219), "
        "6 at top-3 (5 hit→miss, 1 miss→hit)" in rest
    )
    assert "Regressed: top-1 -40.0 pts (max drop 10.0 pts)" in rest
    # everything else is folded, the verdict's own block included
    headline = text[: text.index("<details>")]
    assert "| id |" not in headline and "Verdict:" not in headline
    assert "<details><summary>Verdict details</summary>\n\n```\nVerdict: REGRESSION" in text


@pytest.mark.parametrize(
    ("verdict", "badge", "sentence"),
    [
        (None, "➖ no verdict", None),
        (Verdict(state="baseline", summary="First run: the baseline."), "🆕 baseline", True),
        (Verdict(state="invalid_run", summary="Run invalid: 9 errored."), "⚠️ invalid run", True),
        (Verdict(state="not_comparable", summary="Labels changed."), "➖ not comparable", True),
    ],
)
def test_badges_of_the_states_that_are_not_compared(
    verdict: Verdict | None, badge: str, sentence: bool | None
) -> None:
    run = make_run(hits(3, 4))
    text = render(run, "markdown", verdict=verdict, summary=True)
    assert text.startswith(f"**{badge}** · demo.set × bm25\n")
    assert "| top-1 | 75.0% (3/4) | [30.1%, 95.4%] | – | – |" in text
    assert "Flipped" not in text
    if sentence:
        assert verdict is not None and f"\n{verdict_summary(verdict)}\n" in text


def test_no_regression_badge() -> None:
    current, verdict = _compared([True] * 8 + [False, False])
    assert render(current, "markdown", verdict=verdict, summary=True).startswith(
        "**✅ no regression**"
    )


def test_summary_is_the_headline_alone_in_every_format() -> None:
    current, verdict = _compared(REGRESSED)
    extra = {"run_id": 5, "regression": verdict_document(verdict)}
    markdown = render(current, "markdown", extra, verdict=verdict, summary=True)
    assert render_markdown(current, verdict, 5).startswith(markdown)
    assert "<details>" not in markdown
    text = render(current, "text", extra, verdict=verdict, summary=True)
    assert text.splitlines()[:2] == [
        "REGRESSION  demo.set × bm25, run 5 vs baseline run 4",
        "Top-1: 40.0% (4/10) 95% CI [16.8%, 68.7%]; Δ -40.0 pts vs baseline, paired 95% CI "
        + text.splitlines()[1].rsplit("paired 95% CI ", 1)[1],
    ]
    assert "Per question" not in text
    document = json.loads(render(current, "json", extra, verdict=verdict, summary=True))
    assert document == json.loads(json.dumps(headline_document(current, verdict, extra)))
    assert document["run_id"] == 5 and document["state"] == "regression"
    assert document["top1_hit_rate_ci"] == list(current.top1_hit_rate_ci)  # type: ignore[arg-type]
    assert document["top1_delta_ci"] == list(verdict.top1_delta_ci)  # type: ignore[arg-type]
    assert document["flips"] == {"top1_to_miss": 5, "top1_to_hit": 1, "top3_to_miss": 5,
                                 "top3_to_hit": 1}  # fmt: skip
    assert "questions" not in document
    with pytest.raises(ValueError):
        render(current, "csv", summary=True)


def test_the_text_report_carries_the_verdict_block() -> None:
    current, verdict = _compared(REGRESSED)
    text = render(current, "text", verdict=verdict)
    assert "Verdict: REGRESSION (baseline run 4)" in text
    assert "McNemar exact p = 0.219; change 95% CI [" in text


# -- CSV -------------------------------------------------------------------------------------

HOSTILE = [
    QuestionResult(
        id='=HYPERLINK("http://x")',
        question='comma, "quotes"\nand a newline',
        form=QuestionForm.MATCH,
        hard_class="@class",
        expected_document_ids=["-d1", "d2"],
        top1_hit=False,
        top3_hit=True,
        first_hit_rank=2,
        retrieved=["x", "-d1", "d2"],
        latency_ms=1.5,
    ),
    QuestionResult(
        id="+q2",
        question="\tplain",
        form=QuestionForm.GAP,
        top1_hit=True,
        top3_hit=True,
        first_hit_rank=None,
        retrieved=[],
        latency_ms=None,
    ),
    QuestionResult(
        id="q3",
        question="what failed?",
        form=QuestionForm.MATCH,
        expected_document_ids=["d9"],
        top1_hit=False,
        top3_hit=False,
        error="-RuntimeError: =boom",
    ),
]


def _hostile_run() -> RunResult:
    return summarise(
        HOSTILE,
        set_identifier="s",
        labels_fingerprint="f",
        retriever="r",
        settings=RunSettings(cutoffs=[1, 2, 3], max_error_rate=1.0),
    )


def test_csv_has_one_row_per_question_with_every_metric() -> None:
    run = _hostile_run()
    rows = list(csv.DictReader(io.StringIO(render_csv(run), newline="")))
    assert list(rows[0]) == [
        "id", "question", "form", "hard_class", "expected_document_ids", "retrieved",
        "top1_hit", "top3_hit", "first_hit_rank", "hit_rate@1", "hit_rate@2", "hit_rate@3",
        "recall@1", "recall@2", "recall@3", "mrr", "ndcg@1", "ndcg@2", "ndcg@3", "latency_ms",
        "error", "stale_label", "dead_ids",
    ]  # fmt: skip
    assert len(rows) == 3
    expected = per_question(run.questions, run.settings.cutoffs)
    for row, (_, values) in zip(rows, expected.iterrows(), strict=True):
        for name, value in values.items():
            if math.isnan(value):
                assert row[name] == ""
            else:
                assert float(row[name]) == value
    first, second, _ = rows
    assert first["question"] == 'comma, "quotes"\nand a newline'  # quoted, read back whole
    assert first["expected_document_ids"] == '["-d1", "d2"]'  # starts with [: no formula
    assert first["retrieved"] == '["x", "-d1", "d2"]'
    assert (first["top1_hit"], first["top3_hit"], first["first_hit_rank"]) == ("0", "1", "2")
    assert (first["latency_ms"], second["latency_ms"], second["first_hit_rank"]) == ("1.5", "", "")
    assert second["expected_document_ids"] == "[]" and second["error"] == ""
    # no dead-label check ran: stale_label is unknown (empty), not 0
    assert [(row["stale_label"], row["dead_ids"]) for row in rows] == [("", "")] * 3


def _two_target_question(qid: str, targets: list[str]) -> QuestionResult:
    return QuestionResult(
        id=qid,
        question=f"question {qid}?",
        form=QuestionForm.MATCH,
        expected_document_ids=targets,
        top1_hit=False,
        top3_hit=False,
        retrieved=["other"],
    )


def test_csv_marks_stale_labels_in_two_last_columns() -> None:
    """A stale question (every target dead) reads 1 and names its dead ids; a partly dead one
    (a target survives) is judged as usual, so it reads 0, as does a clean one."""
    from retrieval_eval.evaluation.labels import DeadLabels

    questions = [
        _two_target_question("stale", ["-gone", "gone-2"]),  # "-gone" would start a formula
        _two_target_question("partly", ["gone-3", "alive"]),
        _two_target_question("clean", ["alive"]),
    ]
    labels = DeadLabels(
        checked=True,
        source="corpus",
        dead_ids=["-gone", "gone-2", "gone-3"],
        stale_questions=["stale"],
        partly_dead={"partly": ["gone-3"]},
    )
    run = make_run(questions).model_copy(update={"dead_labels": labels})
    plain = list(csv.reader(io.StringIO(render_csv(make_run(questions)), newline="")))
    marked = list(csv.reader(io.StringIO(render_csv(run), newline="")))
    # the older columns are unchanged, in the same order; the new two come last
    assert [row[:-2] for row in marked] == [row[:-2] for row in plain]
    assert marked[0][-2:] == ["stale_label", "dead_ids"]
    assert [row[-2:] for row in marked[1:]] == [
        ["1", '["-gone", "gone-2"]'],
        ["0", "[]"],
        ["0", "[]"],
    ]
    # a check that could not run (no capability, a failed lookup) marks nothing as known
    unchecked = run.model_copy(update={"dead_labels": DeadLabels(checked=False, source="x")})
    rows = list(csv.DictReader(io.StringIO(render_csv(unchecked), newline="")))
    assert {(row["stale_label"], row["dead_ids"]) for row in rows} == {("", "")}


def test_csv_cells_that_would_run_as_formulas_start_with_a_quote() -> None:
    rows = list(csv.DictReader(io.StringIO(render_csv(_hostile_run()), newline="")))
    assert rows[0]["id"] == '\'=HYPERLINK("http://x")'
    assert rows[0]["hard_class"] == "'@class"
    assert rows[1]["id"] == "'+q2"
    assert rows[1]["question"] == "'\tplain"
    assert rows[2]["error"] == "'-RuntimeError: =boom"
    assert rows[2]["id"] == "q3" and rows[2]["question"] == "what failed?"  # others untouched
    for row in rows:
        for name, cell in row.items():
            assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")), (name, cell)


# -- trec_eval -q ----------------------------------------------------------------------------


def test_per_query_lines_are_trec_eval_q_lines() -> None:
    run = _hostile_run()
    lines = render_per_query(run).splitlines()
    parsed = [line.split("\t") for line in lines]
    assert all(len(fields) == 3 for fields in parsed)
    assert all(
        len(fields[0]) == 22 and fields[0] == fields[0].rstrip().ljust(22) for fields in parsed
    )
    values = per_question(run.questions, run.settings.cutoffs)
    per_id = [(name.strip(), qid, value) for name, qid, value in parsed if qid != "all"]
    shown = run.settings.shown_metric  # mrr@12: the ids MRR read
    expected = [
        (shown(name), str(qid), f"{value:.4f}")
        for qid, row in values.iterrows()
        for name, value in row.items()
        if not math.isnan(value)
    ]
    assert (
        per_id == expected
    )  # question by question; a metric a question does not count in: no line
    assert ("recall@1", "+q2") not in {(n, q) for n, q, _ in per_id}  # no targets
    summary = {name.strip(): value for name, qid, value in parsed if qid == "all"}
    assert summary.pop("num_q") == "3"
    assert summary == {
        shown(name): f"{value:.4f}" for name, value in run.metrics.items() if value is not None
    }
    assert "mrr@12" in summary
    assert lines.index(next(line for line in lines if "\tall\t" in line)) == len(per_id)


# -- HTML ------------------------------------------------------------------------------------


class _Tags(HTMLParser):
    """Collects tags and attribute values, and checks the tags nest."""

    VOID = frozenset({"meta", "br", "img", "hr", "input", "link"})

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.seen: list[str] = []
        self.attributes: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.seen.append(tag)
        self.attributes += [value or "" for _, value in attrs]
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.seen.append(tag)
        self.attributes += [value or "" for _, value in attrs]

    def handle_endtag(self, tag: str) -> None:
        assert self.stack and self.stack[-1] == tag, (tag, self.stack[-5:])
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _stored(result: RunResult, verdict: Verdict | None) -> StoredRun:
    now = datetime(2026, 1, 2, 3, 4, tzinfo=UTC)
    return StoredRun(
        id=7, grader="g", status="valid", run_date=now, created_at=now, verdict=verdict,
        verdict_state=verdict.state if verdict else None, result=result,
    )  # fmt: skip


def test_html_is_one_self_contained_escaped_page() -> None:
    evil = "<script>alert('x')</script>"
    questions = [
        question(evil, True, hard_class="<b>bold</b>"),
        question("q&1", False, error="RuntimeError: <img src=x onerror=alert(1)>"),
        *hits(2, 3),
    ]
    _, verdict = _compared(REGRESSED)
    result = make_run(questions, max_error_rate=1.0)
    page = render_html(_stored(result, verdict))
    parser = _Tags()
    parser.feed(page)
    parser.close()
    assert parser.stack == ["html"] or parser.stack == []
    assert "script" not in parser.seen and "img" not in parser.seen and "b" not in parser.seen
    assert "link" not in parser.seen and "iframe" not in parser.seen
    # nothing loads from anywhere: no src/href, the only URL is the SVG namespace
    assert not any(
        a.startswith(("http", "//", "data:")) for a in parser.attributes if "w3.org" not in a
    )
    assert "src=" not in page.replace("src=x", "") and "href" not in page and "url(" not in page
    assert "default-src 'none'" in page and "<style>" in page and "<svg" in page
    text = "".join(parser.text)
    assert evil in text and "<b>bold</b>" in text and "q&1" in text  # shown, as text
    assert "&lt;script&gt;" in page
    assert page.count("<details>") == 5  # form, class, metrics, questions, verdict
    assert "❌ regression" in text and "McNemar exact p = 0.219" in text


def test_html_of_a_run_without_verdict_or_questions() -> None:
    empty = summarise([], set_identifier="s", labels_fingerprint="f", retriever="r")
    page = render_html(_stored(empty, None))
    parser = _Tags()
    parser.feed(page)
    assert "➖ no verdict" in "".join(parser.text)
    assert "no questions" in page


AWKWARD_IDS = ["a|b", "c,d", 'say "hi"', "line\nbreak", "'quoted'", "[not, a list]", "-neg", "é|ü"]


def test_csv_list_cells_read_back_to_the_exact_ids() -> None:
    """Ids may hold ``|``, ``,``, quotes and newlines: a list cell is a JSON array, so
    ``csv.reader`` then ``json.loads`` give back every id, even the awkward ones."""
    from retrieval_eval.evaluation.labels import DeadLabels

    stale = _two_target_question("stale", AWKWARD_IDS[:4])
    stale = stale.model_copy(update={"retrieved": AWKWARD_IDS[4:]})
    labels = DeadLabels(
        checked=True, source="corpus", dead_ids=AWKWARD_IDS[:4], stale_questions=["stale"]
    )
    run = make_run([stale, _two_target_question("clean", ["x|y"])])
    run = run.model_copy(update={"dead_labels": labels})
    rows = list(csv.DictReader(io.StringIO(render_csv(run), newline="")))
    assert json.loads(rows[0]["expected_document_ids"]) == AWKWARD_IDS[:4]
    assert json.loads(rows[0]["retrieved"]) == AWKWARD_IDS[4:]
    assert sorted(json.loads(rows[0]["dead_ids"])) == sorted(AWKWARD_IDS[:4])
    assert json.loads(rows[1]["expected_document_ids"]) == ["x|y"]  # one id, not two
    assert json.loads(rows[1]["dead_ids"]) == []
