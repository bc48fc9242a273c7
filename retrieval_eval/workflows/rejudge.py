"""Re-judging: stored runs scored again against a set's current labels, from their stored
rankings, without calling any retriever (``retrieval-eval sets rejudge``).

Every stored run keeps, per question, the distinct documents it kept (``retrieved``, to the run's
deepest depth or cutoff). :func:`rejudged_result` scores those against the current labels by the
scoring rules (:func:`retrieval_eval.evaluation.scoring.score_question`) and :func:`rejudge_runs` stores
each as a *re-judged run*: a new ``eval_result`` row naming the run it re-judges
(``rejudged_from``), the labels it was judged against (fingerprint, set version) and what it
could not judge again (:class:`~retrieval_eval.evaluation.results.Rejudged`). Its run date is
its original's, so it sits where its original sits in history and is a baseline candidate for
runs with the new labels by the existing rule (same set, retriever, labels; valid; not a
regression): the newest re-judged run is what the next run compares with. Each re-judged run is
itself judged against the re-judged (or ordinary) run before it with the same labels, so a
regression that only the old labels made disappears, and one that is real stays.

Edge cases:

- Hits are known only as deep as the documents kept: a gated depth deeper than that is left
  out and named (``depths_not_judged``); MRR, which reads everything fetched, is not
  recomputed (``not_recomputed``). hit@k, recall@k and nDCG@k for k up to the kept depth are exact.
- A question of the current labels the run never asked (new, or its text changed) is left out
  (``not_asked``) and so are the run's questions the labels dropped; comparisons with a re-judged
  run are over the questions both runs have (:func:`retrieval_eval.verdicts.regression.unpaired`).
- Idempotent: a run re-judged against the same labels is stored once (its run key is
  ``rejudged:<run id>:<fingerprint>``); re-judging a re-judged run re-judges its original.
- Invalid runs (never compared, never baselines) and runs already judged against these labels
  are skipped, and say so. The dead-label check is not repeated (it asks the retriever).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel

from retrieval_eval.errors import UnknownNameError
from retrieval_eval.evaluation.aggregate import summarise_again
from retrieval_eval.evaluation.results import Rejudged, RunResult
from retrieval_eval.evaluation.scoring import score_question
from retrieval_eval.golden.fingerprint import judged_fingerprint
from retrieval_eval.golden.models import GoldenQuestionSet
from retrieval_eval.verdicts.regression import Verdict, detect_regression
from retrieval_eval.workflows.recording import judged_save

if TYPE_CHECKING:
    from retrieval_eval.config.models import Config, Thresholds
    from retrieval_eval.store import Store, StoredRun

Outcome = Literal["rejudged", "already", "current", "invalid"]


def rejudged_key(run_id: int, fingerprint: str) -> str:
    """The run key of run ``run_id`` re-judged against the labels ``fingerprint``."""
    return f"rejudged:{run_id}:{fingerprint}"


def rejudged_result(
    stored: StoredRun, golden: GoldenQuestionSet, depths: Sequence[int] | None = None
) -> RunResult:
    """``stored``'s rankings scored against ``golden``'s labels, gated at ``depths`` (None: the
    run's own) as deep as its kept documents allow; not saved."""
    old = stored.result
    known = old.settings.depth
    asked = {q.id: q for q in old.questions}
    questions, not_asked = [], []
    for question in golden.questions:
        before = asked.get(question.id)
        if before is None or (before.question and before.question != question.question):
            not_asked.append(question.id)
            continue
        questions.append(
            score_question(
                question,
                None if before.error is not None else before.retrieved,
                depth=known,
                latency_ms=before.latency_ms,
                error=before.error,
                relevance_level=old.settings.relevance_level,
            )
        )
    current = {q.id for q in golden.questions}
    wanted = list(depths or old.depths)
    gated = [d for d in wanted if d <= known] or [1]
    settings = old.settings.model_copy(update={"depths": gated})
    labels = judged_fingerprint(golden, old.settings.relevance_level)
    result = summarise_again(
        questions,
        old,
        set_identifier=golden.identifier,
        labels_fingerprint=labels,
        settings=settings,
        set_name=golden.name,
        set_version=golden.version,
        run_key=rejudged_key(stored.id, labels),
    )
    metrics = dict(result.metrics)
    not_recomputed = []
    if settings.overfetch_multiplier > 1 and "mrr" in metrics:
        metrics.pop("mrr")  # 1/rank over the whole fetch: only the kept part is stored
        not_recomputed.append("mrr")
    return result.model_copy(
        update={
            "metrics": metrics,
            "index_version": old.index_version,
            "rejudged": Rejudged(
                from_run_id=stored.id,
                from_labels_fingerprint=old.labels_fingerprint,
                from_set_version=old.set_version,
                known_depth=known,
                depths_not_judged=[d for d in wanted if d > known],
                not_recomputed=not_recomputed,
                not_asked=not_asked,
                dropped=[q.id for q in old.questions if q.id not in current],
            ),
        }
    )


@dataclass(frozen=True, slots=True)
class Rejudging:
    """What re-judging one stored run did."""

    run_id: int
    retriever: str
    outcome: Outcome
    rejudged_id: int | None = None
    verdict: Verdict | None = None
    shortfall: str | None = None  # what could not be judged again (Rejudged.shortfall)


def rejudge_runs(
    store: Store,
    golden: GoldenQuestionSet,
    runs: Sequence[StoredRun],
    thresholds_for: Callable[[str], Thresholds],
    depths_for: Callable[[str], Sequence[int] | None] = lambda _retriever: None,
) -> list[Rejudging]:
    """Re-judge ``runs`` (of ``golden``'s set) against its labels, oldest first, and store each
    re-judged run judged against the one before it with the same labels; ``thresholds_for`` and
    ``depths_for`` give a retriever's thresholds and gated depths (None: the run's own)."""
    originals: dict[int, StoredRun] = {}
    for run in runs:
        origin = run.result.rejudged
        if origin is not None:  # a re-judged run: its original holds the same rankings
            if origin.from_run_id in originals:
                continue
            with suppress(UnknownNameError):  # pruned: re-judge what the re-judged run kept
                run = store.runs.get(origin.from_run_id)
        originals.setdefault(run.id, run)
    done: list[Rejudging] = []
    for run in sorted(originals.values(), key=lambda r: (r.run_date, r.id)):
        retriever = run.result.retriever
        if run.status != "valid":
            done.append(Rejudging(run.id, retriever, "invalid"))
            continue
        labels = judged_fingerprint(golden, run.result.settings.relevance_level)
        if run.result.labels_fingerprint == labels and run.result.rejudged is None:
            done.append(Rejudging(run.id, retriever, "current"))
            continue
        key = rejudged_key(run.id, labels)
        existing = store.runs.id_for_key(key)
        if existing is not None:
            done.append(Rejudging(run.id, retriever, "already", rejudged_id=existing))
            continue
        result = rejudged_result(run, golden, depths_for(retriever))
        thresholds = thresholds_for(retriever)
        rejudged: dict[str, object] = {
            "rejudged_from": run.id,
            "labels_version": golden.version,
            "labels_fingerprint": golden.fingerprint,
        }
        run_id, verdict = judged_save(store, result, _judge(result, thresholds, rejudged))
        done.append(
            Rejudging(
                run.id,
                retriever,
                "rejudged",
                rejudged_id=run_id,
                verdict=verdict,
                shortfall=result.rejudged.shortfall() if result.rejudged else None,
            )
        )
    return done


def _judge(
    result: RunResult, thresholds: Thresholds, rejudged: dict[str, object]
) -> Callable[[StoredRun | None, bool], Verdict]:
    """The verdict of a re-judged run against the run before it with the same labels. The
    first with these labels starts their baseline: earlier runs under other labels are what
    re-judging makes comparable, not a reason to refuse a comparison."""

    def judged(baseline: StoredRun | None, _comparable: bool) -> Verdict:
        verdict = detect_regression(result, baseline, thresholds, comparable=True)
        return verdict.model_copy(update=rejudged)  # which run, against which labels

    return judged


class RejudgedRun(BaseModel):
    """What re-judging one stored run did (:class:`Rejudging`), as JSON: what ``sets rejudge``
    prints and the labelling DAG's rejudge task returns."""

    run_id: int
    retriever: str
    outcome: Outcome
    rejudged_id: int | None = None
    verdict_state: str | None = None
    baseline_run_id: int | None = None
    shortfall: str | None = None


def rejudge_set(
    config: Config,
    golden: GoldenQuestionSet,
    db: str | None,
    *,
    ids: Sequence[int] | None = None,
    since: datetime | None = None,
) -> list[RejudgedRun]:
    """The stored runs of ``golden``'s set (only ``ids``, or those started on or after
    ``since``, when given) scored again against its labels and stored
    (:func:`~retrieval_eval.workflows.rejudge.rejudge_runs`): ``sets rejudge``, and the
    labelling DAG after a promotion. ``db``: ``--db`` as given. The store must exist."""
    from retrieval_eval.store import resolve_store_url
    from retrieval_eval.store.store import open_existing_store
    from retrieval_eval.workflows.labelled_run import resolve_settings, resolve_thresholds

    identifier = golden.identifier
    with open_existing_store(resolve_store_url(db, config)) as store:
        done = rejudge_runs(
            store,
            golden,
            store.runs.runs_of_set(identifier, ids=ids, since=since),
            lambda r: resolve_thresholds(config, identifier, r),
            lambda r: resolve_settings(config, identifier, r).depths,
        )
    return [
        RejudgedRun(
            run_id=item.run_id,
            retriever=item.retriever,
            outcome=item.outcome,
            rejudged_id=item.rejudged_id,
            verdict_state=item.verdict.state if item.verdict else None,
            baseline_run_id=item.verdict.baseline_run_id if item.verdict else None,
            shortfall=item.shortfall,
        )
        for item in done
    ]
