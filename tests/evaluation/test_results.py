"""Aggregation of per-question results: overall, by form, by hard class, latency, DataFrame."""

from __future__ import annotations

import random

import pandas as pd
import pytest

from retrieval_eval.evaluation.aggregate import summarise
from retrieval_eval.evaluation.results import QuestionResult, RunResult, RunSettings
from retrieval_eval.golden.models import QuestionForm


def r(
    qid: str,
    top1: bool,
    top3: bool,
    form: str = "match",
    hard: str | None = None,
    latency: float | None = 10.0,
    error: str | None = None,
) -> QuestionResult:
    return QuestionResult(
        id=qid,
        form=QuestionForm(form),
        hard_class=hard,
        top1_hit=top1,
        top3_hit=top3,
        first_hit_rank=1 if top1 else (2 if top3 else None),
        retrieved=["d"],
        latency_ms=latency,
        error=error,
    )


def run(questions: list[QuestionResult], **settings: float):
    return summarise(
        questions,
        set_identifier="s",
        labels_fingerprint="f" * 64,
        retriever="r",
        settings=RunSettings(**settings),
    )


RESULTS = [
    r("a", True, True, "match", "near-duplicate", latency=10),
    r("b", False, True, "match", "near-duplicate", latency=20),
    r("c", False, False, "gap", "boilerplate", latency=30),
    r("d", True, True, "gap", None, latency=40),
    r("e", False, False, "gap", None, latency=None, error="RuntimeError: x"),
]


def test_overall_counts_and_rates() -> None:
    result = run(RESULTS, max_error_rate=0.2)
    assert result.question_count == 5
    assert (result.top1_hits, result.top3_hits) == (2, 3)
    assert result.top1_hit_rate == pytest.approx(0.4)
    assert result.top3_hit_rate == pytest.approx(0.6)
    assert result.error_count == 1
    assert result.error_rate == pytest.approx(0.2)
    assert result.valid


def test_error_rate_above_the_maximum_is_invalid() -> None:
    assert not run(RESULTS, max_error_rate=0.19).valid
    assert not run(RESULTS).valid  # default 0.0


def test_by_form() -> None:
    by_form = run(RESULTS).by_form
    assert list(by_form) == ["match", "gap"]
    match, gap = by_form["match"], by_form["gap"]
    assert (match.questions, match.top1_hits, match.top3_hits) == (2, 1, 2)
    assert (match.top1_hit_rate, match.top3_hit_rate) == (0.5, 1.0)
    assert (gap.questions, gap.top1_hits, gap.top3_hits) == (3, 1, 1)
    assert gap.top1_hit_rate == pytest.approx(1 / 3)


def test_both_forms_always_listed_and_an_empty_group_has_no_rate() -> None:
    by_form = run([r("a", True, True, "match")]).by_form
    assert list(by_form) == ["match", "gap"]
    gap = by_form["gap"]
    assert (gap.questions, gap.top1_hits, gap.top3_hits) == (0, 0, 0)
    assert gap.top1_hit_rate is None and gap.top3_hit_rate is None


def test_by_hard_class_leaves_unclassed_questions_to_the_overall_figures() -> None:
    by_class = run(RESULTS).by_hard_class
    assert sorted(by_class) == ["boilerplate", "near-duplicate"]
    assert sum(s.questions for s in by_class.values()) == 3
    near = by_class["near-duplicate"]
    assert (near.questions, near.top1_hit_rate, near.top3_hit_rate) == (2, 0.5, 1.0)
    assert by_class["boilerplate"].top3_hit_rate == 0.0


def test_no_hard_classes_at_all() -> None:
    assert run([r("a", True, True)]).by_hard_class == {}


def test_latency_percentiles_leave_out_errored_questions() -> None:
    latency = run(RESULTS).latency_ms
    # linear interpolation over 10, 20, 30, 40 (the errored question is left out)
    assert latency.p50 == pytest.approx(25.0)
    assert latency.p95 == pytest.approx(38.5)


def test_latency_is_none_when_no_call_succeeded() -> None:
    latency = run([r("a", False, False, latency=5.0, error="TimeoutError")]).latency_ms
    assert latency.p50 is None and latency.p95 is None


def test_single_question_latency() -> None:
    latency = run([r("a", True, True, latency=7.5)]).latency_ms
    assert latency.p50 == latency.p95 == 7.5


def test_empty_run_has_no_rates_and_no_division_by_zero() -> None:
    result = run([])
    assert result.question_count == 0
    assert result.top1_hit_rate is None and result.top3_hit_rate is None
    assert result.by_form["match"].top1_hit_rate is None
    assert result.valid and result.error_rate == 0.0


def test_per_question_dataframe() -> None:
    frame = run(RESULTS).to_frame()
    assert isinstance(frame, pd.DataFrame)
    assert list(frame["id"]) == ["a", "b", "c", "d", "e"]
    for column in ("form", "hard_class", "top1_hit", "top3_hit", "first_hit_rank", "latency_ms"):
        assert column in frame.columns
    assert frame["top1_hit"].dtype == bool
    assert frame["first_hit_rank"].tolist()[:3] == [1, 2, pd.NA]
    assert frame["form"].tolist() == ["match", "match", "gap", "gap", "gap"]
    assert frame.loc[frame["error"].notna(), "id"].tolist() == ["e"]
    # the frame supports the analysis it is offered for
    assert frame.groupby("form")["top3_hit"].mean().to_dict() == pytest.approx(
        {"gap": 1 / 3, "match": 1.0}
    )


def test_settings_depth_and_fetch_limit() -> None:
    assert (RunSettings().depth, RunSettings().fetch_limit) == (3, 12)
    deep = RunSettings(cutoffs=[1, 3, 10])
    assert (deep.depth, deep.fetch_limit) == (10, 40)
    assert RunSettings(overfetch_multiplier=2).fetch_limit == 6


def test_contract_has_the_documented_keys_and_slices() -> None:
    contract = run(RESULTS).contract()
    for key in (
        "set", "retriever", "question_count", "top1_hits", "top3_hits", "top1_hit_rate",
        "top3_hit_rate", "error_count", "valid", "by_form", "by_hard_class", "latency_ms",
        "questions",
    ):  # fmt: skip
        assert key in contract
    gap_ci = [pytest.approx(0.0614919447), pytest.approx(0.7923403992)]  # Wilson, 1 of 3
    assert contract["by_form"]["gap"] == {
        "questions": 3,
        "top1_hit_rate": pytest.approx(1 / 3),
        "top3_hit_rate": pytest.approx(1 / 3),
        "top1_hit_rate_ci": gap_ci,
        "top3_hit_rate_ci": gap_ci,
    }
    assert contract["latency_ms"] == {"p50": 25.0, "p95": pytest.approx(38.5)}
    assert set(contract["questions"][0]) == {
        "id", "form", "hard_class", "top1_hit", "top3_hit", "first_hit_rank", "retrieved",
        "latency_ms", "error",
    }  # fmt: skip
    assert contract["questions"][4]["error"] == "RuntimeError: x"
    assert contract["questions"][0]["form"] == "match"


def test_contract_questions_are_what_model_dump_gives() -> None:
    from retrieval_eval.evaluation.scoring import score_many
    from retrieval_eval.golden.models import GoldenQuestion

    fields = {
        "id", "form", "hard_class", "top1_hit", "top3_hit", "first_hit_rank", "retrieved",
        "latency_ms", "error",
    }  # fmt: skip
    questions = [
        GoldenQuestion(id="t1", question="x", form="gap", expected_document_ids=("d",)),
        GoldenQuestion(id="t2", question="y", form="match", hard_class="h"),
    ]
    judged = score_many(questions, [["d", "e"], ["e"]])
    result = run([*RESULTS, *judged])
    expected = [q.model_dump(mode="json", include=fields) for q in result.questions]
    assert result.contract()["questions"] == expected
    assert [list(q) for q in result.contract()["questions"]] == [list(q) for q in expected]


def _pandas_figures(result: RunResult) -> dict[str, object]:
    """The figures as grouping the per-question frame with pandas gives them (what summarise
    computed with pandas until it stopped importing it)."""
    frame = result.to_frame()
    ok = frame.loc[frame["error"].isna(), "latency_ms"].dropna().astype(float)
    figures: dict[str, object] = {
        "counts": (
            int(frame["top1_hit"].sum()),
            int(frame["top3_hit"].sum()),
            int(frame["error"].notna().sum()),
        ),
        "latency": (float(ok.quantile(0.5)), float(ok.quantile(0.95))) if len(ok) else None,
    }
    for column, always in (("form", ["match", "gap"]), ("hard_class", [])):
        groups = frame.groupby(column, sort=True)
        sums, sizes = groups[["top1_hit", "top3_hit"]].sum(), groups.size()
        found = {
            str(value): (int(sizes[value]), int(row.top1_hit), int(row.top3_hit))
            for value, row in zip(sums.index, sums.itertuples(index=False), strict=True)
        }
        order = [*always, *(v for v in found if v not in always)]
        figures[column] = [(v, *found.get(v, (0, 0, 0))) for v in order]
    return figures


def _figures(result: RunResult) -> dict[str, object]:
    latency = result.latency_ms
    return {
        "counts": (result.top1_hits, result.top3_hits, result.error_count),
        "latency": None if latency.p50 is None else (latency.p50, latency.p95),
        "form": [(v, s.questions, s.top1_hits, s.top3_hits) for v, s in result.by_form.items()],
        "hard_class": [
            (v, s.questions, s.top1_hits, s.top3_hits) for v, s in result.by_hard_class.items()
        ],
    }


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_summarise_gives_what_grouping_the_frame_with_pandas_gives(seed: int) -> None:
    rng = random.Random(seed)
    questions = []
    for i in range(300):
        top3 = rng.random() < 0.6
        error = rng.choice([None, None, None, "TimeoutError", ""])  # "" is an error too
        latency = rng.choice([None, float("nan"), rng.uniform(0, 50), 7.0])
        questions.append(
            r(
                f"q{i}",
                top3 and error is None and rng.random() < 0.5,
                top3 and error is None,
                rng.choice(["match", "gap"]),
                rng.choice([None, "zeta", "alpha", "Beta", "near-duplicate", "10", "9"]),
                latency=latency,
                error=error,
            )
        )
    for chosen in (questions, questions[:1], [q for q in questions if q.error], []):
        result = run(chosen, max_error_rate=1)
        assert _figures(result) == _pandas_figures(result)
