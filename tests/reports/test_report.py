"""The three report formats, and a text report that stays readable when piped."""

from __future__ import annotations

import json
from enum import IntEnum, StrEnum

import pytest

from retrieval_eval.evaluation.results import RunResult, RunSettings
from retrieval_eval.evaluation.scoring import evaluate
from retrieval_eval.formats.jsonio import dumps
from retrieval_eval.golden.models import GoldenQuestion, GoldenQuestionSet
from retrieval_eval.reports.markdown import render_markdown
from retrieval_eval.reports.report import render
from retrieval_eval.reports.text import PIPE_WIDTH, render_text
from retrieval_eval.retrievers.base import FunctionRetriever

LONG_ID = "a-question-id-" + "that-goes-on-" * 10 + "end"  # 147 characters
LONG_CLASS = "a-deliberately-long-hard-class-name-for-the-report-test"
LONG_ERROR = "the backend refused: " + "quite a long explanation, " * 6 + "THE-END"


def make_result() -> RunResult:
    questions = (
        GoldenQuestion(id="hit", question="alpha", form="match", expected_document_ids=("a",)),
        GoldenQuestion(
            id=LONG_ID, question="beta", form="gap", expected_document_ids=("b",),
            hard_class=LONG_CLASS,
        ),
        GoldenQuestion(id="pipe|id", question="gamma", form="gap", hard_class="x|y"),
    )  # fmt: skip

    def retrieve(question: str, limit: int) -> list[str]:
        if question == "gamma":
            raise RuntimeError(LONG_ERROR)
        return ["a", "c", "b"]

    golden = GoldenQuestionSet(identifier="report.demo", questions=questions)
    return evaluate(golden, FunctionRetriever(retrieve, "fn"), RunSettings(max_error_rate=0.5))


@pytest.fixture(scope="module")
def result() -> RunResult:
    return make_result()


def test_text_headline_lines(result: RunResult) -> None:
    lines = render_text(result).splitlines()
    assert "Top-1 hit rate: 33.3% [6.1%, 79.2%] (1/3)" in lines  # 95% Wilson intervals
    assert "Top-3 hit rate: 66.7% [20.8%, 93.9%] (2/3)" in lines
    assert lines[0] == "Set report.demo  Retriever fn  Questions 3"
    assert lines[-1] == "Errors: 1/3 (max error rate 0.5) - run valid"
    assert any(line.startswith("Latency: p50 ") for line in lines)


def test_text_tables(result: RunResult) -> None:
    text = render_text(result)
    for title in ("Per question", "By form", "By hard class"):
        assert title in text.splitlines()
    rows = {line.split("│")[1].strip(): line for line in text.splitlines() if "│" in line}
    assert "match" in rows and "gap" in rows  # by-form rows
    assert "100.0% (1)" in rows["match"] and "[20.7%, 100.0%]" in rows["match"]
    assert "[0.0615, 0.7923]" in rows["hit_rate@1"]  # a proportion: its interval
    # a mean: no interval; MRR named with the ids it read (top-3 × 4)
    assert rows["mrr@12"].rstrip("│ ").endswith("0.6667")
    assert "Wilson score interval; for hit_rate@k only" in text
    assert "hit" in rows["hit"] and "miss" not in rows["hit"]


def test_piped_text_keeps_long_ids_and_classes_whole(result: RunResult) -> None:
    text = render_text(result)  # stdout is captured by pytest: not a terminal
    assert "…" not in text
    assert any(LONG_ID in line for line in text.splitlines())
    assert any(LONG_CLASS in line for line in text.splitlines())
    # errors wrap inside their column instead of being cut
    assert "THE-END" in text
    assert all(line == line.rstrip() for line in text.splitlines())


def test_piped_text_is_140_wide_when_ids_are_short() -> None:
    golden = GoldenQuestionSet(
        identifier="s",
        questions=(GoldenQuestion(id="q1", question="x", form="gap"),),
    )
    error = "RuntimeError: " + "word " * 80
    result = evaluate(golden, FunctionRetriever(lambda t, k: (_ for _ in ()).throw(OSError(error))))
    widths = [len(line) for line in render_text(result).splitlines()]
    assert max(widths) <= PIPE_WIDTH


def test_text_at_a_fixed_narrow_width_folds_ids_instead_of_cutting(result: RunResult) -> None:
    text = render_text(result, width=100)
    assert "…" not in text
    assert all(len(line) <= 100 for line in text.splitlines())
    flat = "".join(line.split("│")[1].strip() for line in text.splitlines() if line.count("│") > 6)
    assert LONG_ID in flat


def test_markdown(result: RunResult) -> None:
    text = render_markdown(result)
    assert text.startswith("**➖ no verdict** · report.demo × fn\n")
    assert "| top-1 | 33.3% (1/3) | [6.1%, 79.2%] | – | – |" in text
    assert "| top-3 | 66.7% (2/3) | [20.8%, 93.9%] | – | – |" in text
    for title in ("By form", "By hard class", "Metrics", "Per question (3)"):
        assert f"<details><summary>{title}</summary>\n\n|" in text
    assert "| match | 1 | 100.0% (1) | [20.7%, 100.0%] | 100.0% (1) | [20.7%, 100.0%] |" in text
    assert "| hit_rate@1 | 0.3333 | [0.0615, 0.7923] |" in text and "| mrr@12 | 0.6667 |  |" in text
    assert text.count("<details>") == text.count("</details>") == 4
    # pipes inside cells are escaped so the table keeps its columns
    row = next(line for line in text.splitlines() if line.startswith("| pipe"))
    assert row.startswith("| pipe\\|id | gap | x\\|y | miss | miss |")
    assert f"| {LONG_ID} |" in text


def test_json_is_the_contract(result: RunResult) -> None:
    data = json.loads(render(result, "json"))
    assert data == json.loads(json.dumps(result.contract()))
    assert data["set"] == "report.demo" and data["question_count"] == 3


def test_json_is_the_contract_and_extra(result: RunResult) -> None:
    extra = {"run_id": 4, "saved": True, "regression": {"state": "baseline", "p_value": None}}
    text = render(result, "json", extra=extra)
    assert text.endswith("}\n") and text.startswith('{\n  "set": "report.demo",')
    assert json.loads(text) == json.loads(json.dumps({**result.contract(), **extra}))


def strict_loads(text: str) -> object:
    """``json.loads`` refusing NaN and the infinities, which are no JSON."""

    def refuse(constant: str) -> object:
        raise ValueError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


class Form(StrEnum):
    GAP = "gap"


class Rank(IntEnum):
    ONE = 1


AWKWARD = 'q"\\\n\t\u0001é☃😀\u2028</script>'


@pytest.mark.parametrize(
    ("value", "parsed"),
    [
        ([], []),
        ({"id": AWKWARD, "retrieved": [], "latency_ms": 0.1 + 0.2}, None),
        ([None, True, False, 0, -1, 2**63 - 1, 1e-300, -0.0, 1e22, "x"], None),
        (
            {"nan": float("nan"), "inf": float("inf"), "-inf": float("-inf")},
            dict.fromkeys(["nan", "inf", "-inf"]),
        ),
        ((1, 2), [1, 2]),
        ([Form.GAP, Rank.ONE], ["gap", 1]),
        ({1: "key not a string"}, {"1": "key not a string"}),
    ],
    ids=repr,
)
def test_json_documents_are_valid_json_of_the_same_values(value: object, parsed: object) -> None:
    """Every JSON document is valid JSON (NaN and infinities are null), non-ASCII kept as UTF-8."""
    document = {"set": "s", "questions": value, "after": {"x": [1, {"y": []}]}, "run_id": None}
    text = dumps(document)
    expected = value if parsed is None else parsed
    assert strict_loads(text) == {**document, "questions": expected}
    assert strict_loads(dumps(document, indent=False)) == strict_loads(text)
    assert text.startswith('{\n  "set": "s",') and "\n" not in dumps(document, indent=False)
    if value and isinstance(value, dict) and "id" in value:
        assert "é☃😀" in text  # as UTF-8, not escaped


def test_json_refuses_a_string_that_is_no_unicode_text() -> None:
    with pytest.raises(TypeError, match="surrogates"):
        dumps({"id": "\ud800"})


def test_a_nan_in_the_report_is_null(result: RunResult) -> None:
    odd = result.model_copy(
        update={
            "questions": [result.questions[0].model_copy(update={"latency_ms": float("nan")})],
            "metrics": {**result.metrics, "mrr": float("inf")},
        }
    )
    data = strict_loads(render(odd, "json"))
    assert isinstance(data, dict)
    assert data["questions"][0]["latency_ms"] is None and data["metrics"]["mrr"] is None


def test_render_dispatches_on_format(result: RunResult) -> None:
    assert render(result, "markdown") == render_markdown(result)
    assert render(result, "text").startswith("Set report.demo")


def test_stored_strings_that_look_like_rich_markup_are_printed_as_data() -> None:
    """A question id "[/f]" or a retriever "[bold]x" is text: rich must neither parse nor eat it."""
    from retrieval_eval import FunctionRetriever, evaluate
    from retrieval_eval.golden.models import GoldenQuestionSet

    golden = GoldenQuestionSet(
        identifier="s",
        questions=[
            {
                "id": "[/f]",
                "question": "[bold]x[/f]",
                "form": "match",
                "expected_document_ids": ["[/a]"],
            }
        ],
    )
    result = evaluate(golden, FunctionRetriever(lambda q, limit: ["[/b]"], identifier="[red]r"))
    text = render_text(result, width=200)
    assert "[/f]" in text and "[red]r" in text


def test_a_large_run_lists_its_misses_and_errors_and_says_where_the_rest_is() -> None:
    from retrieval_eval.reports.text import QUESTION_ROWS

    n = QUESTION_ROWS + 150
    questions = [
        GoldenQuestion(
            id=f"q{i}", question=f"question {i}", form="match", expected_document_ids=(f"d{i}",)
        )
        for i in range(n)
    ]

    def retrieve(question: str, limit: int) -> list[str]:
        i = int(question.split()[1])
        return [f"d{i}"] if i % 2 else ["other"]  # odd questions hit, even ones miss

    golden = GoldenQuestionSet(identifier="big.demo", questions=questions)
    lines = render_text(evaluate(golden, FunctionRetriever(retrieve, "fn"))).splitlines()
    misses = n // 2 + n % 2
    assert f"Misses and errors (first {QUESTION_ROWS} of {misses})" in lines
    assert (
        f"{n - QUESTION_ROWS} questions not listed here; `--format csv` (or json) lists every question"
        in lines
    )
    listed = [line for line in lines if line.startswith(("┃ q", "│ q"))]
    assert len(listed) == QUESTION_ROWS
    assert all(int(line.split()[1][1:]) % 2 == 0 for line in listed)  # misses only
