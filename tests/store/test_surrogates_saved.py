"""A retriever's id or error text that is no Unicode text (a lone surrogate) is its question's
error, and the run is saved, on each backend (``retrieval_eval/safety/surrogates.py``).

Before, the id crashed the JSON report and the PostgreSQL save, the error text the SQLite save.
"""

from __future__ import annotations

from retrieval_eval.evaluation.results import RunSettings
from retrieval_eval.evaluation.scoring import evaluate
from retrieval_eval.golden.models import GoldenQuestion, GoldenQuestionSet
from retrieval_eval.reports.json import render_json
from retrieval_eval.retrievers.base import FunctionRetriever
from retrieval_eval.store import open_store

LONE = "\ud800"


def _golden() -> GoldenQuestionSet:
    return GoldenQuestionSet(
        identifier="t.surrogates",
        questions=[
            GoldenQuestion(id=name, question=name, form="match", expected_document_ids=["a"])
            for name in ("bad-id", "raises", "fine")
        ],
    )


def _retrieve(text: str, limit: int) -> list[str]:
    if text == "bad-id":
        return ["a", f"c{LONE}"]
    if text == "raises":
        raise RuntimeError(f"upstream said {LONE}")
    return ["a"]


def test_a_retriever_s_bad_id_or_error_text_is_its_question_s_error_and_the_run_is_saved(
    store_url: str,
) -> None:
    retriever = FunctionRetriever(_retrieve, identifier="surrogates")
    result = evaluate(_golden(), retriever, RunSettings(max_error_rate=1.0))
    bad, raises, fine = result.questions
    assert bad.error is not None and bad.error.startswith("ValueError: retriever returned id")
    assert "'c\\ud800' at position 1" in bad.error and not bad.top1_hit  # an error is a miss
    assert raises.error == "RuntimeError: upstream said \\ud800"  # escaped, readable
    assert fine.error is None and fine.top1_hit
    report = render_json(result)  # every value of the report encodes
    report.encode("utf-8")
    with open_store(store_url) as store:
        run_id = store.runs.save(result)
        stored = store.get_run(run_id)
    assert stored is not None
    assert [q.error for q in stored.result.questions] == [q.error for q in result.questions]
