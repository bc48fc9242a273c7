"""Ask a retriever every query of a sample, through the protocol of a labelled run.

The same overfetch (``k`` × the multiplier), collapse to distinct documents, per-call timeouts,
bounded concurrency and error recording as :func:`retrieval_eval.evaluation.scoring.evaluate`;
each query keeps its top-``k`` distinct ids. Every query is asked its text as captured
(:func:`~retrieval_eval.workflows.samples.resolve_texts`); results keep only its stored form.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any, NamedTuple

from retrieval_eval.evaluation.results import RunSettings
from retrieval_eval.evaluation.scoring import Asked, ask
from retrieval_eval.golden.models import GoldenQuestion, QuestionForm
from retrieval_eval.replay.compare import Ranked
from retrieval_eval.replay.samples import QuerySample, SampledQuery
from retrieval_eval.retrievers.base import EvaluatableRetriever
from retrieval_eval.retrievers.ranking import collapse
from retrieval_eval.safety.collector import young_collections_only

DEFAULT_K = 10


@dataclass(frozen=True, slots=True)
class ReplaySettings:
    """How deep each ranking is kept, and the call bounds of a labelled run."""

    k: int = DEFAULT_K
    timeout_s: float | None = 30.0
    max_concurrency: int | None = None

    def run_settings(self) -> RunSettings:
        return RunSettings(
            top_k=self.k,
            cutoffs=[1, self.k],
            timeout_s=self.timeout_s,
            max_concurrency=self.max_concurrency,
        )


class Query(NamedTuple):
    """A sampled query as the protocol asks it: its text, the id ``retrieve_for`` reads, and the
    sampled query its answer is kept for."""

    id: str
    question: str
    sampled: SampledQuery


def replay_sample(
    sample: QuerySample,
    texts: Mapping[str, str],
    retriever: EvaluatableRetriever,
    settings: ReplaySettings | None = None,
) -> list[Ranked]:
    """Each query of ``sample`` asked with ``texts[key]``, in the sample's order.

    No query is judged (there are no labels): each answer becomes the query's :class:`Ranked`
    as it comes (its top-``k`` distinct ids, or its error in the sample's stored form). A
    retriever with ``retrieve_for`` gets the golden-question objects its contract names; any
    other is asked by text.
    """
    settings = settings or ReplaySettings()
    privacy = sample.privacy
    asked = sample.queries  # resolve_texts stops a replay missing any of their texts
    # the log's own id where it has one: a run file looks rankings up by it
    questions: Sequence[Asked]
    if hasattr(retriever, "retrieve_for"):
        # the sample's texts were checked when it was drawn: built without validating them again
        questions = [
            GoldenQuestion.model_construct(
                id=q.query_id or q.key, question=texts[q.key], form=QuestionForm.MATCH
            )
            for q in asked
        ]
        # by object: ids from the log need not be unique, and the questions live until the end
        by_object = {id(g): q for g, q in zip(questions, asked, strict=True)}

        def sampled(question: Any) -> SampledQuery:
            return by_object[id(question)]
    else:
        questions = [Query(q.query_id or q.key, texts[q.key], q) for q in asked]
        sampled = attrgetter("sampled")  # type: ignore[assignment]  # gives Query.sampled

    def kept(
        question: Any, ranking: list[str] | None, depth: int, _latency: float, error: str | None
    ) -> Ranked:
        """A call's outcome as a replay keeps it: the top ``depth`` distinct ids, or its error."""
        q = sampled(question)
        if error is not None:
            error = private(error, question.question, q.text, privacy)
            return Ranked(q.key, q.text, q.count, q.bucket, (), error)
        ids = tuple(collapse(ranking)[:depth]) if ranking else ()
        return Ranked(q.key, q.text, q.count, q.bucket, ids)

    with young_collections_only():  # the kept rankings would set off full sweeps
        return ask(questions, retriever, settings.run_settings(), kept)


def private(error: str, asked: str, stored: str, privacy: str) -> str:
    """An error text that shows no more of the query than its stored form: a retriever's
    message may quote the text it was asked."""
    if privacy == "plain":
        return error
    from retrieval_eval.safety.redaction import redact_personal

    return redact_personal(error.replace(asked, stored) if asked else error)
