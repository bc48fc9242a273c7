"""A busier store than ``fill.py``'s: long runs, every kind of run mark, a collapse, same-minute runs.

One pair, ``docs.faq × bm25``, has runs of 120 questions (three pages on the run page) in two
forms and three hard classes, one question with no expected id ("nothing answers"), and a
history holding a regression that was then accepted as the baseline, an invalid run (too many
retriever errors) and two runs started in the same minute. Its top-1 and top-3 rates are equal
in the first runs (coincident lines). A second pair, ``docs.faq × dense``, collapses from 80 % to
60 % in its last run (the sparkline must show it). Runs are recorded through ``record_run``, as
the CLI does, so baselines and verdicts are the real ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from store.builders import make_run

from retrieval_eval.config.models import Thresholds
from retrieval_eval.evaluation.results import QuestionResult
from retrieval_eval.golden.models import QuestionForm
from retrieval_eval.store import open_store
from retrieval_eval.workflows.recording import record_run

SET = "docs.faq"
BM25 = "bm25"
DENSE = "dense"
QUESTIONS = 120
NOTHING = "q119"  # the question with no expected id
CLASSES = (None, "negation", "numeric", "multi-hop")


@dataclass
class Busy:
    url: str
    runs: dict[str, list[int]] = field(default_factory=dict)  # retriever -> ids, oldest first
    regression: int = 0  # the bm25 regression, accepted as the baseline afterwards
    invalid: int = 0
    same_minute: tuple[int, int] = (0, 0)


def _question(i: int, top1: bool, top3: bool, error: bool) -> QuestionResult:
    qid = f"q{i:03d}"
    expected = [] if qid == NOTHING else [f"doc-{i}", f"doc-{i}b"] if i % 7 == 0 else [f"doc-{i}"]
    ranking = ["other-1", "other-2", "other-3"]
    if expected and top3:
        ranking.insert(0 if top1 else 1, expected[0])
    return QuestionResult(
        id=qid,
        question=f"How does feature {i} behave?",
        form=QuestionForm.GAP if i % 3 == 0 else QuestionForm.MATCH,
        hard_class=CLASSES[i % 4],
        expected_document_ids=expected,
        top1_hit=bool(expected) and top1 and not error,
        top3_hit=bool(expected) and top3 and not error,
        first_hit_rank=(1 if top1 else 2) if expected and top3 and not error else None,
        retrieved=[] if error else ranking,
        latency_ms=None if error else 4.0 + i % 5,
        error="retriever timed out" if error else None,
    )


def _questions(top1: int, top3: int, errors: int = 0) -> list[QuestionResult]:
    """``top1`` hits at rank 1, then hits at rank 2 up to ``top3``; the last ``errors`` fail."""
    return [_question(i, i < top1, i < top3, i >= QUESTIONS - errors) for i in range(QUESTIONS)]


def fill_busy(url: str) -> Busy:
    busy = Busy(url=url)
    thresholds = Thresholds()
    plan = [  # (retriever, top-1 hits, top-3 hits, errors)
        (BM25, 96, 96, 0),
        (BM25, 97, 97, 0),
        (BM25, 60, 60, 0),  # regression, accepted as the baseline below
        (BM25, 62, 70, 0),
        (BM25, 40, 50, 40),  # invalid: a third of the questions failed
        (BM25, 90, 100, 0),
        (BM25, 92, 104, 0),
        (BM25, 93, 104, 0),  # started in the same minute as the previous run
        (DENSE, 96, 100, 0),
        (DENSE, 96, 100, 0),
        (DENSE, 97, 101, 0),
        (DENSE, 72, 90, 0),  # the collapse: 80 % -> 60 %
    ]
    for day, (retriever, top1, top3, errors) in enumerate(plan):
        result = make_run(
            _questions(top1, top3, errors),
            set_identifier=SET,
            retriever=retriever,
            day=day if day != 7 else 6,
            max_error_rate=0.1,
        )
        if day == 7:  # 20 seconds after run 6: the same minute on the x axis
            result = result.model_copy(
                update={"started_at": result.started_at + timedelta(seconds=20)}
            )
        recorded = record_run(result, store_url=url, thresholds=thresholds)
        assert recorded.saved and recorded.run_id is not None, recorded
        busy.runs.setdefault(retriever, []).append(recorded.run_id)
    ids = busy.runs[BM25]
    busy.regression, busy.invalid, busy.same_minute = ids[2], ids[4], (ids[6], ids[7])
    with open_store(url) as store:
        assert store.get_run(busy.regression).is_regression
        assert store.get_run(busy.invalid).status == "invalid"
        store.runs.accept_baseline(busy.regression)
    return busy
