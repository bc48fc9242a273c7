"""Record a run: choose its baseline, judge it, save both. The one call the CLI and the DAG share.

:class:`RunRecord` is the one record of a labelled run once recorded: the result, the thresholds
it was judged with, the store it was meant for, what recording did (id, verdict, where it was
spooled) and the power figure. Its JSON is what the DAG's record task hands on (XCom) and what
the spool keeps: a spool file is the record's :class:`~retrieval_eval.store.spool.SpooledRun`
fields, so files written before the record existed are read and flushed the same way.

If the store cannot be reached, nothing is lost and nothing is raised: the verdict says the store
was unreachable (state ``not_comparable``, or ``invalid_run`` for an invalid run), the run goes to
a spool file (a temporary folder when the spool cannot take it), :attr:`Recorded.spool_path` tells
the caller where, and :meth:`Recorded.failure` is the error the caller ends with (exit 3; 2 for a
store a newer retrieval-eval migrated).
``replay_spool`` saves spooled runs later, judging each against the baseline it would have had,
into the store each was meant for (see :func:`flush_spool`); spooled replays of query samples
(:func:`retrieval_eval.workflows.replay.record_replay`) are saved by the same pass, each compared
as it would have been when it ran.

Baseline choice: a pinned ``baseline_run_id`` wins; otherwise the newest run that is valid, has the
same labels, was not a regression nor refused as a baseline (unless accepted) and started before
this run finished. With ``dead_labels_baseline="refuse"`` (the config's default), a run whose
index lost labelled documents (questions with no target left) is stored, judged and alerted as usual, but refused as a
baseline (:attr:`Verdict.baseline_refused`): the previous baseline stays; chosen,
judged and saved in one transaction serialised per (set, retriever): see
:func:`judged_save`. With no baseline but earlier runs under other labels, the verdict is
``not_comparable``: the golden set changed.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from retrieval_eval.config.models import Thresholds
from retrieval_eval.errors import (
    Interrupted,
    InvalidInputError,
    StoreTooNewError,
    StoreUnavailableError,
    UnknownNameError,
)
from retrieval_eval.evaluation.labels import DeadLabels
from retrieval_eval.evaluation.results import RunResult
from retrieval_eval.lint.models import PowerReport
from retrieval_eval.store.names import GRADER
from retrieval_eval.store.spool import SpooledRun
from retrieval_eval.verdicts.models import Cause
from retrieval_eval.verdicts.regression import Verdict, detect_regression

if TYPE_CHECKING:  # the store (SQLAlchemy) is imported by the calls that open one
    from retrieval_eval.replay.record import ReplayRecord
    from retrieval_eval.store import Store, StoredRun
    from retrieval_eval.store.spool import Kept


class Recorded(BaseModel):
    """What happened to a run: its id when saved, its verdict, where its JSON went when the store
    did not take it (the spool, or a temporary folder when the spool failed too), and then what
    ``run`` says about it, with the exit code of the store's failure (:meth:`failure`)."""

    run_id: int | None
    saved: bool
    verdict: Verdict
    spool_path: Path | None = None
    problem: str | None = None  # the store's failure and where the run went: None when saved
    problem_exit_code: int = 3  # 3 the store failed; 2 a newer retrieval-eval migrated it

    def failure(self) -> StoreUnavailableError | None:
        """The error a command ends with for :attr:`problem`, None when there is none."""
        return None if self.problem is None else store_error(self.problem, self.problem_exit_code)


class RunRecord(SpooledRun, Recorded):
    """One labelled run, recorded: what it spools (:class:`SpooledRun`: the result, the
    thresholds, a pinned baseline, the store it was meant for), what recording did
    (:class:`Recorded`: its id, its verdict, where it was spooled, the store's failure) and the
    smallest drop the set's size detects (``power``). The CLI renders it, the DAG's record task
    returns its JSON, an alert reads it; a spool file holds its :class:`SpooledRun` fields."""

    power: PowerReport | None = None

    @property
    def dead_labels(self) -> DeadLabels | None:
        return self.result.dead_labels


def later(exit_code: int) -> str:
    """When a run the store did not take can be saved, after a store error of ``exit_code``."""
    return "once retrieval-eval is upgraded" if exit_code == StoreTooNewError.exit_code else "later"


def store_error(message: str, exit_code: int) -> StoreUnavailableError:
    """The store error of kind ``exit_code`` (3, or 2: a newer version migrated the store)."""
    if exit_code == StoreTooNewError.exit_code:
        return StoreTooNewError(message)
    return StoreUnavailableError(message)


def judge_and_save(
    store: Store,
    result: RunResult,
    thresholds: Thresholds,
    *,
    baseline_run_id: int | None = None,
    save: bool = True,
    dead_labels_baseline: str = "refuse",
    approve_labels_change: bool = False,
) -> Recorded:
    """Judge ``result`` against its baseline in ``store`` and (unless ``save=False``) save it.

    Baseline choice, judging and saving happen in one transaction, serialised per (set,
    retriever) with every other run being recorded (:func:`judged_save`).
    ``approve_labels_change``: a valid run under changed labels is refused as a baseline
    (:attr:`Verdict.needs_approval`) until it is accepted, instead of starting one.
    """

    def judge(baseline: StoredRun | None, comparable: bool) -> Verdict:
        # an invalid run starts no baseline: the note would contradict its verdict
        labels_changed = not comparable and result.valid
        cause: Cause | None = None
        if labels_changed:
            cause = "awaiting_approval" if approve_labels_change else "labels_changed"
        verdict = detect_regression(
            result, baseline, thresholds, comparable=comparable, cause=cause
        )
        if labels_changed and approve_labels_change:
            verdict = verdict.model_copy(update={"baseline_refused": True, "needs_approval": True})
        return refused_as_baseline(verdict, result, dead_labels_baseline)

    run_id, verdict = judged_save(store, result, judge, baseline_run_id=baseline_run_id, save=save)
    return Recorded(run_id=run_id, saved=run_id is not None, verdict=verdict)


def judged_save(
    store: Store,
    result: RunResult,
    judge: Callable[[StoredRun | None, bool], Verdict],
    *,
    baseline_run_id: int | None = None,
    save: bool = True,
) -> tuple[int | None, Verdict]:
    """Choose ``result``'s baseline, judge it and save it in ONE transaction, serialised per
    (set, retriever, grader) with every other judged save of that key
    (:meth:`Store.serialised`); return the stored id (None with ``save=False``) and the verdict.

    So runs of one key recorded at the same time queue up and form a chain: one ``baseline``,
    and each later run judged against the newest good run committed before it, never two runs
    judged against the same stale baseline. ``judge(baseline, comparable)`` builds the verdict:
    ``baseline`` is the run pinned by ``baseline_run_id`` (UnknownNameError if there is none) or
    the newest baseline among the runs that started before ``result`` finished (a run scored
    long ago and saved late, a replayed spool file, is not compared with a later run);
    ``comparable`` is False when there is no baseline but valid runs under other labels exist.
    A run saved before (same run key) is not judged again: its id and stored verdict come back.
    """
    key = (result.set_identifier, result.retriever, GRADER)
    runs = store.runs
    with store.transaction() as conn:
        store.serialised(conn, *key)
        stored = runs.by_key(result.run_key, questions=False, conn=conn)
        if stored is not None:  # saved before: same id, same verdict
            return stored.id, stored.verdict or judge(None, True)
        comparable = True
        baseline: StoredRun | None
        if baseline_run_id is not None:
            baseline = runs.get(baseline_run_id, conn=conn)
        else:
            baseline = runs.find_baseline(
                *key[:2], result.labels_fingerprint, GRADER, before=result.finished_at, conn=conn
            )
            if baseline is None:
                fingerprints = runs.fingerprints(*key, conn=conn)
                comparable = not fingerprints - {result.labels_fingerprint}
        verdict = judge(baseline, comparable)
        run_id = runs.insert(conn, result, verdict) if save else None
    return run_id, verdict


def refused_as_baseline(verdict: Verdict, result: RunResult, policy: str) -> Verdict:
    """``verdict`` marked :attr:`~Verdict.baseline_refused` (for dead labels) when ``policy`` is
    ``refuse`` and a valid run that did not regress has stale questions (every target gone from
    the index): it would otherwise become the next run's baseline. A question that lost only
    some targets is still judged, and does not refuse the run."""
    labels = result.dead_labels
    if policy != "refuse" or not result.valid or verdict.is_regression:
        return verdict
    if labels is None or not labels.stale_questions:
        return verdict
    return verdict.model_copy(update={"baseline_refused": True, "refused_for_dead_labels": True})


def record_run(
    result: RunResult,
    *,
    store_url: str,
    thresholds: Thresholds,
    baseline_run_id: int | None = None,
    save: bool = True,
    spool_dir: Path | None = None,
    dead_labels_baseline: str = "refuse",
    approve_labels_change: bool = False,
) -> RunRecord:
    """Pick the baseline, build the verdict, save run and verdict in one transaction
    (``approve_labels_change``: see :func:`judge_and_save`); the record says what was done.

    Never raises StoreUnavailableError: a store that fails gives a spooled run (when ``save``;
    see :func:`~retrieval_eval.store.spool.keep_spooled` for a spool that fails too), a verdict
    saying so and :attr:`Recorded.problem`. An unknown pinned baseline raises UnknownNameError
    (exit 2).
    """
    from retrieval_eval.store import mask_url, open_store
    from retrieval_eval.store.spool import keep_spooled
    from retrieval_eval.store.url import parse_store_url, store_fingerprint

    result = errors_redacted(result)
    shown = mask_url(parse_store_url(store_url))
    meant: dict[str, Any] = {
        "result": result,
        "thresholds": thresholds,
        "baseline_run_id": baseline_run_id,
        "store": shown,
        "store_fingerprint": store_fingerprint(store_url),
    }
    try:
        with open_store(store_url) as store:
            recorded = judge_and_save(
                store,
                result,
                thresholds,
                baseline_run_id=baseline_run_id,
                save=save,
                dead_labels_baseline=dead_labels_baseline,
                approve_labels_change=approve_labels_change,
            )
        return RunRecord(
            **meant, run_id=recorded.run_id, saved=recorded.saved, verdict=recorded.verdict
        )
    except StoreUnavailableError as exc:
        kept = keep_spooled(SpooledRun(**meant), spool_dir) if save else None
        too_new = isinstance(exc, StoreTooNewError)
        problem = not_saved(exc, kept, "run", f"saves it into {shown}")
        verdict = detect_regression(
            result,
            None,
            thresholds,
            comparable=False,
            cause="store_too_new" if too_new else "store_unreachable",
            store_problem=problem,
        )
        return RunRecord(
            **meant,
            run_id=None,
            saved=False,
            verdict=verdict,
            spool_path=kept.path if kept else None,
            # without save nothing is lost, unless the store never takes a run of this version
            problem=problem if save or too_new else None,
            problem_exit_code=exc.exit_code,
        )


def not_saved(exc: StoreUnavailableError, kept: Kept | None, what: str, saves: str) -> str:
    """What a run or replay (``what``) the store did not take says: the store's failure, where
    it went (the spool, else a temporary folder, else nowhere) and the command that saves it
    later, which ``saves`` (a clause: "saves it into STORE")."""
    if kept is None:  # not to be saved
        return str(exc)
    if kept.path is None:
        return f"{exc}; {kept.problem}: the {what} was written nowhere, its report is all there is"
    command = flush_command(kept.path.parent)
    flush = f"save it {later(exc.exit_code)} with `{command}`, which {saves}"
    if kept.problem is None:
        return f"{exc}; the {what} was spooled to {kept.path}: {flush}"
    return f"{exc}; {kept.problem}: {flush}"


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


def flush_command(folder: Path) -> str:
    """The command that replays a spool folder, as a hint prints it."""
    from retrieval_eval.store.spool import default_spool_dir

    if folder == default_spool_dir():
        return "retrieval-eval db flush"
    return f"retrieval-eval db flush --spool-dir {folder}"


class Flushed(BaseModel):
    """What a replay did: the ids saved, in order (runs in ``ids``, replays of query samples in
    ``replays``), and the stores they went to; the files set aside (new path, reason); the
    files left in place (store unreachable, or not removable)."""

    ids: list[int] = []
    replays: list[int] = []
    stores: list[str] = []  # masked URLs
    set_aside: list[tuple[Path, str]] = []
    left: list[tuple[Path, str]] = []
    overridden: int = 0  # files that recorded another store than the explicit one
    unreachable: str | None = None  # the first unreachable store's error
    unreachable_exit_code: int = 3  # its kind: 2 for a store a newer retrieval-eval migrated


def replay_target(entry: SpooledRun | ReplayRecord, fallback: str) -> str | None:
    """The store a spooled run goes to: the one it recorded, with its password from
    ``fallback`` (the store the flags name) when their fingerprints agree, as recorded when the
    URL holds no password; ``fallback`` for a file that recorded none. None: unknown."""
    from retrieval_eval.store.url import store_fingerprint

    if entry.store is None or entry.store_fingerprint is None:
        return fallback
    if store_fingerprint(fallback) == entry.store_fingerprint:
        return fallback
    try:
        if store_fingerprint(entry.store) == entry.store_fingerprint:
            return entry.store  # nothing was masked: the URL is whole
    except Exception:  # a recorded URL SQLAlchemy cannot parse is no store either
        return None
    return None


def flush_spool(store_url: str, spool_dir: Path | None = None, *, override: bool = True) -> Flushed:
    """Save the spooled runs of a folder, oldest first, one file in memory at a time, deleting
    each file once its run is saved.

    ``override``: every run goes into ``store_url``; else each into the store it recorded
    (:func:`replay_target`; files written before stores were recorded go into ``store_url``).
    Holds the folder's lock (FlushBusyError when another replay has it). Unreadable files are
    set aside and nothing is saved (InvalidInputError naming them: fix one and move it back, or
    replay again without it). A run pinned to a baseline that no longer exists, or meant for a
    store this replay cannot open, is set aside and the others are replayed. The files of an
    unreachable store stay, and :attr:`Flushed.unreachable` says why. An interrupt raises
    :class:`~retrieval_eval.errors.Interrupted` naming the runs saved so far.
    """
    from retrieval_eval.store.spool import default_spool_dir, replay_lock, scan_spool

    folder = spool_dir or default_spool_dir()
    done = Flushed()
    with replay_lock(folder):
        paths, unreadable = scan_spool(folder)
        if unreadable:
            for path, reason in unreadable:
                _set_aside(done, path, reason)
            names = "; ".join(reason for _, reason in unreadable)
            raise InvalidInputError(
                f"{names}. Set aside in {folder / 'rejected'} (each with a .reason file); nothing "
                f"was replayed: fix a file and move it back, or run `{flush_command(folder)}` "
                f"again to replay the other {len(paths)} without it"
            )
        stores: dict[str, Store] = {}
        try:
            for path in paths:
                _replay_one(done, path, store_url, override, stores)
        except KeyboardInterrupt as exc:
            saved = ", ".join(map(str, done.ids)) or "none"
            raise Interrupted.by(
                exc,
                f"while replaying {folder}: saved run ids {saved}; the other spooled runs stay "
                "there (the one being saved is saved in full or not at all, and replaying it "
                f"again is harmless): run `{flush_command(folder)}` again",
            ) from None
        finally:
            for store in stores.values():
                store.close()
    return done


def _replay_one(
    done: Flushed, path: Path, fallback: str, override: bool, stores: dict[str, Store]
) -> None:
    from retrieval_eval.store import mask_url, open_store
    from retrieval_eval.store.spool import read_spool
    from retrieval_eval.store.url import store_fingerprint

    entry = read_spool(path)
    target = fallback if override else replay_target(entry, fallback)
    if target is None:
        _set_aside(
            done,
            path,
            f"{path}: spooled for the result store at {entry.store}, whose full URL this replay "
            f"does not have (the store --db, $RETRIEVAL_EVAL_DB or the config name is "
            f"{mask_url(fallback)}); flush it with `retrieval-eval db flush --db URL "
            f"--spool-dir {path.parent / 'rejected'}`",
        )
        return
    if override and entry.store_fingerprint not in (None, store_fingerprint(target)):
        done.overridden += 1
    try:
        store = stores.get(target)
        if store is None:
            store = stores[target] = open_store(target)
        if entry.kind == "replay":
            from retrieval_eval.workflows.replay import save_spooled

            replay_id = save_spooled(store, entry)
            done.replays.append(replay_id)
            saved: int | None = replay_id
        else:
            saved = judge_and_save(
                store, entry.result, entry.thresholds, baseline_run_id=entry.baseline_run_id
            ).run_id
            if saved is not None:
                done.ids.append(saved)
    except UnknownNameError as exc:  # a pinned baseline (compared replay) that no longer exists
        _set_aside(done, path, f"{path}: {exc}")
        return
    except StoreUnavailableError as exc:
        done.left.append((path, str(exc)))
        if done.unreachable is None:
            done.unreachable, done.unreachable_exit_code = str(exc), exc.exit_code
        return
    if (shown := mask_url(target)) not in done.stores:
        done.stores.append(shown)
    try:
        path.unlink()
    except OSError as exc:  # a read-only spool folder: saved, but the file stays
        done.left.append(
            (path, f"saved as {entry.kind} {saved}, but the file could not be removed "
             f"({exc.strerror}); replaying it again is harmless (same run key)"),
        )  # fmt: skip


def _set_aside(done: Flushed, path: Path, reason: str) -> None:
    from retrieval_eval.store.spool import set_aside

    try:
        done.set_aside.append((set_aside(path, reason), reason))
    except OSError as exc:  # a read-only folder: the file stays where it is
        done.left.append((path, f"{reason} (could not set it aside: {exc.strerror})"))


def replay_spool(store_url: str, spool_dir: Path | None = None) -> list[int]:
    """Save every spooled run (oldest first) into ``store_url`` and delete its file; return the
    stored ids.

    Raises StoreUnavailableError when the store is still unreachable (the files stay), and
    InvalidInputError naming a spool file that cannot be read (set aside, nothing saved) or a
    run set aside for a pruned baseline. See :func:`flush_spool` for the details.
    """

    done = flush_spool(store_url, spool_dir)
    if done.unreachable:
        raise store_error(done.unreachable, done.unreachable_exit_code)
    if done.set_aside:
        raise UnknownNameError("; ".join(reason for _, reason in done.set_aside))
    return done.ids
