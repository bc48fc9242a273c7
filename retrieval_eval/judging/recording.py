"""Record a run: choose its baseline, judge it, save both. The one call the CLI and the DAG share.

If the store cannot be reached, nothing is lost and nothing is raised: the verdict says the store
was unreachable (state ``not_comparable``, or ``invalid_run`` for an invalid run), the run goes to
a spool file, and :attr:`Recorded.spool_path` tells the caller (the CLI exits 3 on it).
``replay_spool`` saves spooled runs later, judging each against the baseline it would have had.

Baseline choice: a pinned ``baseline_run_id`` wins; otherwise the newest run that is valid, has the
same labels, was not a regression nor refused as a baseline (unless accepted) and started before
this run finished. With ``dead_labels_baseline="refuse"`` (the config's default), a run whose
index lost labelled documents (questions with no target left) is stored, judged and alerted as usual, but refused as a
baseline (:attr:`Verdict.baseline_refused`): the previous baseline stays; chosen,
judged and saved in one transaction serialised per (set, retriever): see
:meth:`Store.judged_save`. With no baseline but earlier runs under other labels, the verdict is
``not_comparable``: the golden set changed.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel

from retrieval_eval.config.models import Thresholds
from retrieval_eval.errors import StoreUnavailableError, UnknownNameError
from retrieval_eval.evaluation.results import RunResult
from retrieval_eval.judging.regression import Verdict, detect_regression

if TYPE_CHECKING:  # the store (SQLAlchemy) is imported by the calls that open one
    from retrieval_eval.store import Store, StoredRun

BASELINE_REFUSED = (
    "Not accepted as the baseline: the index lost labelled documents (dead_labels_baseline: "
    "refuse); the previous baseline stays until `retrieval-eval baseline accept RUN_ID`."
)
LABELS_CHANGED = (
    "The golden set's labels changed since the last stored run; this run starts a new baseline."
)


class Recorded(BaseModel):
    """What happened to a run: its id when saved, its verdict, its spool file when spooled."""

    run_id: int | None
    saved: bool
    verdict: Verdict
    spool_path: Path | None = None


def judge_and_save(
    store: Store,
    result: RunResult,
    thresholds: Thresholds,
    *,
    baseline_run_id: int | None = None,
    save: bool = True,
    dead_labels_baseline: str = "refuse",
) -> Recorded:
    """Judge ``result`` against its baseline in ``store`` and (unless ``save=False``) save it.

    Baseline choice, judging and saving happen in one transaction, serialised per (set,
    retriever) with every other run being recorded (:meth:`Store.judged_save`).
    """

    def judge(baseline: StoredRun | None, comparable: bool) -> Verdict:
        # an invalid run starts no baseline: the note would contradict its verdict
        note = None if comparable or not result.valid else LABELS_CHANGED
        verdict = detect_regression(result, baseline, thresholds, comparable=comparable, note=note)
        return refused_as_baseline(verdict, result, dead_labels_baseline)

    run_id, verdict = store.judged_save(result, judge, baseline_run_id=baseline_run_id, save=save)
    return Recorded(run_id=run_id, saved=run_id is not None, verdict=verdict)


def refused_as_baseline(verdict: Verdict, result: RunResult, policy: str) -> Verdict:
    """``verdict`` marked :attr:`~Verdict.baseline_refused` (and saying so) when ``policy`` is
    ``refuse`` and a valid run that did not regress has stale questions (every target gone from
    the index): it would otherwise become the next run's baseline. A question that lost only
    some targets is still judged, and does not refuse the run."""
    labels = result.dead_labels
    if policy != "refuse" or not result.valid or verdict.is_regression:
        return verdict
    if labels is None or not labels.stale_questions:
        return verdict
    summary = f"{verdict.summary} {BASELINE_REFUSED}".strip()
    return verdict.model_copy(update={"baseline_refused": True, "summary": summary})


def record_run(
    result: RunResult,
    *,
    store_url: str,
    thresholds: Thresholds,
    baseline_run_id: int | None = None,
    save: bool = True,
    spool_dir: Path | None = None,
    dead_labels_baseline: str = "refuse",
) -> Recorded:
    """Pick the baseline, build the verdict, save run and verdict in one transaction.

    Never raises StoreUnavailableError: an unreachable store gives a spooled run (when ``save``)
    and a verdict saying so. An unknown pinned baseline raises UnknownNameError (exit 2).
    """
    from retrieval_eval.store import open_store
    from retrieval_eval.store.spool import SpooledRun, write_spool

    result = errors_redacted(result)
    try:
        with open_store(store_url) as store:
            return judge_and_save(
                store,
                result,
                thresholds,
                baseline_run_id=baseline_run_id,
                save=save,
                dead_labels_baseline=dead_labels_baseline,
            )
    except StoreUnavailableError as exc:
        note = f"Result store unreachable: {exc}."
        spool_path = None
        if save:
            entry = SpooledRun(
                result=result, thresholds=thresholds, baseline_run_id=baseline_run_id
            )
            spool_path = write_spool(entry, spool_dir)
            note += f" The run was spooled to {spool_path}; save it later with `retrieval-eval db replay`."
        verdict = detect_regression(result, None, thresholds, comparable=False, note=note)
        return Recorded(run_id=None, saved=False, verdict=verdict, spool_path=spool_path)


def errors_redacted(result: RunResult) -> RunResult:
    """``result`` with its error texts redacted again, just before they are stored or spooled.

    The scorer redacts them already; but a run scored in another process (an Airflow task) did
    not know every secret this one does, such as the store's own password.
    """
    from retrieval_eval.safety.redaction import redact

    questions, changed = [], False
    for question in result.questions:
        if question.error is not None and (masked := redact(question.error)) != question.error:
            question, changed = question.model_copy(update={"error": masked}), True
        questions.append(question)
    return result.model_copy(update={"questions": questions}) if changed else result


def replay_spool(store_url: str, spool_dir: Path | None = None) -> list[int]:
    """Save every spooled run (oldest first) and delete its file; return the stored ids.

    Raises StoreUnavailableError when the store is still unreachable (the files stay), and
    InvalidInputError naming a spool file that cannot be read.
    """
    from retrieval_eval.store import open_store
    from retrieval_eval.store.spool import spooled_files

    entries = spooled_files(spool_dir)
    if not entries:
        return []
    ids: list[int] = []
    with open_store(store_url) as store:
        for path, entry in entries:
            try:
                recorded = judge_and_save(
                    store, entry.result, entry.thresholds, baseline_run_id=entry.baseline_run_id
                )
            except UnknownNameError as exc:  # a pinned baseline that no longer exists
                raise UnknownNameError(f"{path}: {exc}") from None
            if recorded.run_id is not None:
                ids.append(recorded.run_id)
            path.unlink()
    return ids
