"""``rows.stored_run`` with retrieval_eval.store.trusted builds the same models as validation.

Each run below is stored once, then read both ways from the same rows: trusted and validated
(``rows.stored_run`` as the Store does).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from pydantic import BaseModel

from retrieval_eval.cli import cli
from retrieval_eval.evaluation.labels import DeadLabels
from retrieval_eval.judging.regression import SliceRegression, Verdict
from retrieval_eval.store import Store, open_store, rows
from retrieval_eval.store.schema import eval_result_question, eval_result_slice
from retrieval_eval.store.trusted import NotPlain, trusted
from store.builders import hits, make_run, question

SLICE = SliceRegression(
    dimension="hard_class", value="para", metric="top3", baseline=0.75, current=0.25, delta=-0.5
)
VERDICTS = {
    "regression": Verdict(
        state="regression",
        baseline_run_id=1,
        top1_delta=-0.25,
        top3_delta=0.0,
        top1_baseline=0.75,
        top1_current=0.5,
        is_regression=True,
        slice_regressions=[SLICE],
        flipped_to_miss=["q000"],
        top3_flipped_to_hit=["q003"],
        p_value=0.5,
        top1_delta_ci=(-0.5, 0.125),
        top3_delta_ci=(-0.25, 0.25),
        latency_regression=True,
        latency_p95_ratio=1.5,
        dead_ids=["doc-q001"],
        stale_questions=["q001"],
        compared_questions=3,
        reasons=["top-1", "latency"],
        summary="worse",
    ),
    "no_regression": Verdict(state="no_regression", baseline_run_id=1, top1_delta=0.0),
    "baseline": Verdict(state="baseline", summary="first run"),
    "not_comparable": Verdict(state="not_comparable", summary="labels changed"),
    "invalid_run": Verdict(state="invalid_run", baseline_run_id=1, summary="too many errors"),
}
DEAD = DeadLabels(
    checked=True,
    source="index",
    dead_ids=["doc-q001", "doc-x"],
    stale_questions=["q001"],
    partly_dead={"q002": ["doc-x"]},
)


def _runs() -> list[tuple[Any, Verdict | None]]:
    """Runs of every shape a row can hold: verdicts of each kind, errors, slices by form and
    hard class, dead labels, lint findings, empty optionals."""
    mixed = [
        question("q000", True, form="gap", hard_class="para"),
        question("q001", False, True, hard_class="near-dup"),
        question("q002", False, error="TimeoutError: slow", latency_ms=None),
        question("q003", False, False, form="gap"),
    ]
    return [
        (make_run(hits(3, 4), day=0), VERDICTS["baseline"]),
        (
            make_run(mixed, day=1, max_error_rate=1.0, corpus_revision="rev-2").model_copy(
                update={"dead_labels": DEAD, "lint": {"mode": "warn", "counts": {"error": 1}}}
            ),
            VERDICTS["regression"],
        ),
        (make_run(hits(2, 3), day=2), VERDICTS["no_regression"]),
        (make_run(hits(0, 3, error="boom"), day=3), VERDICTS["invalid_run"]),
        (make_run(hits(1, 2), day=4, fingerprint="fp-2"), VERDICTS["not_comparable"]),
        (make_run(hits(0, 2, error="down"), day=5), None),  # no latency, no verdict
        (
            make_run(hits(1, 2), day=6).model_copy(
                update={"dead_labels": DeadLabels(checked=False, source="not supported")}
            ),
            None,
        ),
    ]


@pytest.fixture
def filled(tmp_path: Path) -> tuple[str, list[int]]:
    url = f"sqlite:///{tmp_path / 'results.sqlite'}"
    store: Store = open_store(url)
    try:
        ids = [store.save(result, verdict) for result, verdict in _runs()]
        store.accept_baseline(ids[1])
    finally:
        store.close()
    return url, ids


def _rows(store: Store, run_id: int) -> tuple[Any, Any, Any]:
    """The run's decoded rows, as the Store reads them."""
    with store.engine.connect() as conn:
        (row,) = [dict(r) for r in conn.execute(Store._by_id(run_id)).mappings()]
        questions, slices = (
            [dict(r) for r in conn.execute(t.select().where(t.c.run_id == run_id)).mappings()]
            for t in (eval_result_question, eval_result_slice)
        )
    return row, questions, slices


def _read_both(store: Store, run_id: int) -> tuple[Any, Any]:
    """The run read from the same rows: trusted (raising if it cannot be), and validated."""
    row, questions, slices = _rows(store, run_id)
    validated = rows.stored_run(*copy.deepcopy((row, questions, slices)))
    return rows.stored_run(row, questions, slices, trusted), validated


def _same(fast: Any, slow: Any, where: str = "run") -> None:
    """Equal, with the same fields set and values of the same types, all the way down."""
    assert type(fast) is type(slow), where
    if isinstance(slow, BaseModel):
        assert fast.model_fields_set == slow.model_fields_set, where
        assert fast.__pydantic_extra__ == slow.__pydantic_extra__, where
        assert list(vars(fast)) == list(vars(slow)), where
        for name in type(slow).model_fields:
            _same(getattr(fast, name), getattr(slow, name), f"{where}.{name}")
    elif isinstance(slow, dict):
        assert list(fast) == list(slow), where
        for key in slow:
            _same(fast[key], slow[key], f"{where}[{key!r}]")
    elif isinstance(slow, list | tuple):
        assert len(fast) == len(slow), where
        for i, (a, b) in enumerate(zip(fast, slow, strict=True)):
            _same(a, b, f"{where}[{i}]")
    else:
        assert fast == slow, where
        if hasattr(slow, "tzinfo"):
            assert type(fast.tzinfo) is type(slow.tzinfo), where


def test_every_shape_of_run_is_read_trusted_as_validation_reads_it(
    filled: tuple[str, list[int]],
) -> None:
    url, ids = filled
    with open_store(url) as store:
        for run_id in ids:
            fast, slow = _read_both(store, run_id)
            assert fast == slow
            _same(fast, slow, f"run {run_id}")
            assert store.get_run(run_id) == slow


FORMATS = [
    [],
    ["--format", "json"],
    ["--format", "markdown"],
    ["--format", "csv"],
    ["--summary"],
    ["--summary", "--format", "json"],
    ["--summary", "--format", "markdown"],
    ["--per-query"],
]


def test_show_prints_the_same_bytes_either_way(
    filled: tuple[str, list[int]], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    url, ids = filled
    monkeypatch.chdir(tmp_path)  # no config file: the power line uses the defaults
    monkeypatch.delenv("RETRIEVAL_EVAL_CONFIG", raising=False)

    def shown() -> list[tuple[int, str]]:
        out = []
        for run_id in ids:
            for args in FORMATS:
                done = CliRunner().invoke(cli, ["show", str(run_id), "--db", url, *args])
                out.append((done.exit_code, done.output))
        return out

    fast = shown()
    assert all(code == 0 for code, _ in fast)

    def refuse(cls: type, values: dict[str, Any]) -> Any:
        raise NotPlain("validate everything")

    monkeypatch.setattr(
        "retrieval_eval.store.trusted.trusted", refuse
    )  # and so do the power figures
    assert shown() == fast
