"""The run pipeline the CLI's ``run`` and the DAG's tasks share, as small steps.

resolve (the set, the settings, the thresholds, the retriever's name) → evaluate (the protocol,
then the run's dead labels, with the retriever open) → power (the smallest drop the set's size
detects) → record (judged against its baseline and saved, or judged as a first run when there is
no store). :func:`run_pipeline` chains them in one process; the DAG calls the steps one task
at a time, since it fans retrieval out per batch. Names resolve one way, down: the config, then
the retriever registry it builds.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from retrieval_eval.config.models import Config, RunOptions, Thresholds
from retrieval_eval.errors import Interrupted, InvalidInputError
from retrieval_eval.evaluation.labels import attach_dead_labels
from retrieval_eval.evaluation.results import RunResult, RunSettings
from retrieval_eval.evaluation.scoring import evaluate
from retrieval_eval.golden.loaders import SET_SUFFIXES, load_golden_set
from retrieval_eval.golden.models import GoldenQuestionSet
from retrieval_eval.retrievers.base import EvaluatableRetriever
from retrieval_eval.retrievers.isolation import stdout_to_stderr
from retrieval_eval.safety.limits import quote
from retrieval_eval.workflows.recording import Recorded

if TYPE_CHECKING:
    from retrieval_eval.evaluation.labels import DeadLabels
    from retrieval_eval.labels.machine import JudgeFigures
    from retrieval_eval.lint.models import PowerReport
    from retrieval_eval.verdicts.regression import Verdict


def resolve_set(config: Config, name: str, identifier: str | None = None) -> GoldenQuestionSet:
    """A registered set identifier, or a path to a set file (relative to the cwd).

    ``identifier`` names a file's set (JSONL and CSV files have none of their own); with a
    registered set it is an error, since it would silently go unused.
    """
    path = Path(name)
    if path.suffix.lower() in SET_SUFFIXES or path.is_file():
        return load_golden_set(path, identifier=identifier)
    if identifier is not None:
        raise InvalidInputError(
            f"--identifier names the set of a set file, but {quote(name)} is not a set file; "
            "give the file's path, or leave --identifier out"
        )
    return config.golden_sets.get(name)


def resolve_retriever(config: Config, name: str) -> EvaluatableRetriever:
    return config.retriever_registry.build(name)


@contextmanager
def opened_retriever(config: Config, name: str) -> Iterator[EvaluatableRetriever]:
    """Build the retriever; close it afterwards when it has ``close()`` (pools, connections).

    From the build to the close, what the retriever prints goes to stderr, never into a report
    on stdout (:mod:`retrieval_eval.retrievers.isolation`). A ``close()`` that raises is logged
    as a warning, not raised: by then the run is evaluated (and, the block done, saved unless
    ``--no-save``), and a pool that fails to shut down must not lose it, nor hide the block's
    own error.
    """
    with stdout_to_stderr():
        retriever = resolve_retriever(config, name)
        try:
            yield retriever
        finally:
            _close(retriever, name)


def _close(retriever: EvaluatableRetriever, name: str) -> None:
    """Call the retriever's ``close()``, if any, logging (not raising) its failure."""
    close = getattr(retriever, "close", None)
    if callable(close):
        try:
            close()
        except Exception as exc:
            from retrieval_eval.safety.redaction import redact
            from retrieval_eval.safety.surrogates import escaped

            said = str(exc).strip()
            text = f"{type(exc).__name__}: {said}" if said else type(exc).__name__
            logging.getLogger(__name__).warning(
                "retriever %s: close() failed after the evaluation, whose results stand: %s",
                quote(name),
                escaped(redact(text))[:300],
            )


def resolve_settings(
    config: Config, set_identifier: str, retriever: str, **overrides: Any
) -> RunSettings:
    """Run settings: the config's ``run:``, then the evaluation's own, then explicit overrides."""
    options: RunOptions = config.section_for(set_identifier, retriever, "run")
    return RunSettings.model_validate(_overridden(options.settings(), overrides))


def resolve_thresholds(
    config: Config, set_identifier: str, retriever: str, **overrides: Any
) -> Thresholds:
    """Thresholds: the config's ``thresholds:``, then the evaluation's own, then overrides."""
    chosen: Thresholds = config.section_for(set_identifier, retriever, "thresholds")
    return Thresholds.model_validate(_overridden(chosen, overrides))


def _overridden(section: Any, overrides: Mapping[str, Any]) -> dict[str, Any]:
    """A config section's values with the overrides that are set (None: not given)."""
    values: dict[str, Any] = section.model_dump()
    values.update({k: v for k, v in overrides.items() if v is not None})
    return values


@dataclass(frozen=True)
class Plan:
    """What one run evaluates and is judged with: every input checked, nothing built yet."""

    config: Config
    golden_set: GoldenQuestionSet
    retriever_name: str
    settings: RunSettings
    thresholds: Thresholds


def resolve_run(
    config: Config,
    set_name: str,
    retriever_name: str,
    *,
    identifier: str | None = None,
    run: Mapping[str, Any] | None = None,
    thresholds: Mapping[str, Any] | None = None,
    check_store: Callable[[], object] | None = None,
) -> Plan:
    """The set, its settings (``run`` overrides), its thresholds (``thresholds`` overrides),
    the store (``check_store`` raises for a bad URL) and the retriever's name, each checked
    in that order: every option fails before any retriever code is imported (a
    ``module:attribute`` name is imported by the check). The retriever is not built."""
    golden_set = resolve_set(config, set_name, identifier)
    settings = resolve_settings(config, golden_set.identifier, retriever_name, **(run or {}))
    limits = resolve_thresholds(config, golden_set.identifier, retriever_name, **(thresholds or {}))
    _check_gated(settings, limits, thresholds or {})
    if check_store is not None:
        check_store()
    config.retriever_registry.check(retriever_name)
    return Plan(config, golden_set, retriever_name, settings, limits)


def _check_gated(settings: RunSettings, limits: Thresholds, given: Mapping[str, Any]) -> None:
    """A max drop given for a depth other than 1 and 3 that the run does not gate would never
    apply: an error (exit 2) naming the depth, the run's depths and the fix."""
    named = {f"max_top{depth}_drop": depth for depth in limits.depths_named()}
    ungated = sorted(
        named[key] for key, value in given.items()
        if value is not None and key in named and named[key] not in settings.depths
    )  # fmt: skip
    if ungated:
        raise InvalidInputError(
            f"a max drop was given for depth {ungated[0]}, which this run does not gate (its "
            f"depths: {settings.depths}); add {ungated[0]} to the depths (--depths, run.depths) "
            "or leave the threshold out"
        )


def evaluate_run(plan: Plan, *, progress: bool = False) -> RunResult:
    """Build the retriever, evaluate the set, and find its dead labels (one ``existing_ids``
    call while the retriever is open: stale labels are left out of the verdict)."""
    with opened_retriever(plan.config, plan.retriever_name) as retriever:
        return evaluate_opened(plan, retriever, progress=progress)


def evaluate_opened(
    plan: Plan, retriever: EvaluatableRetriever, *, progress: bool = False
) -> RunResult:
    """:func:`evaluate_run` with the retriever already open (``sets pool --fresh`` also asks it
    for texts); the caller closes it."""
    result = evaluate(plan.golden_set, retriever, plan.settings, progress=progress)
    return attach_dead_labels(result, plan.golden_set, retriever)


def record_verdict(
    result: RunResult,
    thresholds: Thresholds,
    *,
    store_url: str | None,
    baseline_run_id: int | None = None,
    save: bool = True,
    dead_labels_baseline: str = "refuse",
    approve_labels_change: bool = False,
) -> Recorded:
    """Judge the run against its baseline and save it (:func:`~retrieval_eval.workflows.recording.
    record_run`); with no store (``store_url`` None) it is judged as a first run, kept nowhere.
    A first run not to be saved says it does not become the baseline."""
    from retrieval_eval.verdicts.regression import (
        BECOMES_BASELINE,
        NOT_SAVED_BASELINE,
        detect_regression,
    )

    if store_url is None:
        verdict = detect_regression(result, None, thresholds)
        recorded = Recorded(run_id=None, saved=False, verdict=verdict)
    else:
        from retrieval_eval.workflows.recording import record_run

        recorded = record_run(
            result,
            store_url=store_url,
            thresholds=thresholds,
            baseline_run_id=baseline_run_id,
            save=save,
            dead_labels_baseline=dead_labels_baseline,
            approve_labels_change=approve_labels_change,
        )
    verdict = recorded.verdict
    if save or verdict.state != "baseline":
        return recorded
    summary = verdict.summary.replace(BECOMES_BASELINE, NOT_SAVED_BASELINE)
    return recorded.model_copy(update={"verdict": verdict.model_copy(update={"summary": summary})})


def power_figures(result: RunResult, thresholds: Thresholds, config: Config) -> PowerReport:
    """The smallest drop this set's size detects, next to the thresholds the verdict used."""
    from retrieval_eval.lint.power import run_power

    return run_power(result, thresholds, config.lint)


def stored_judge_figures(result: RunResult, store_url: str | None) -> JudgeFigures | None:
    """The run's figures beside a model judge's labels (holes by who judged, the human-only,
    human+machine and prediction-powered hit rates), when the store holds machine judgments
    (``rater = judge:<name>``) of its set; None otherwise, or when the store cannot be read
    (the run's own figures stand without them)."""
    if store_url is None:
        return None
    from retrieval_eval.errors import NoStoreError, StoreUnavailableError
    from retrieval_eval.labels.machine import judge_figures
    from retrieval_eval.store import open_store_to_read
    from retrieval_eval.store.judgments import read_stored_judgments

    try:
        store = open_store_to_read(store_url)
    except (NoStoreError, StoreUnavailableError):
        return None
    try:
        rows = read_stored_judgments(store, result.set_identifier)
    except StoreUnavailableError:
        return None
    finally:
        store.close()
    return judge_figures(result, rows)


@dataclass(frozen=True)
class PipelineRun:
    """What one run of the pipeline produced: the result, what was recorded, the power, and
    the figures beside a model judge's labels when the store has any for the set."""

    result: RunResult
    recorded: Recorded
    power: PowerReport
    judge_figures: JudgeFigures | None = None

    @property
    def verdict(self) -> Verdict:
        return self.recorded.verdict

    @property
    def run_id(self) -> int | None:
        return self.recorded.run_id

    @property
    def spool_path(self) -> Path | None:
        return self.recorded.spool_path

    @property
    def dead_labels(self) -> DeadLabels | None:
        return self.result.dead_labels


def run_pipeline(
    plan: Plan,
    *,
    store_url: str | None,
    baseline_run_id: int | None = None,
    save: bool = True,
    progress: bool = False,
    index_version: str | None = None,
) -> PipelineRun:
    """Evaluate, size and record one resolved run (see the module docstring); ``index_version``
    names the index build measured (stored with the run).

    An interrupt (Ctrl-C, a KeyboardInterrupt, SIGTERM in the CLI) becomes
    :class:`~retrieval_eval.errors.Interrupted` saying what was saved: nothing while the
    retriever runs; while the run is recorded, either all of it or nothing (one transaction, a
    spool file written whole), which ``runs list`` tells. Recording is the last step, so once it
    returns the caller knows the run's id.
    """
    try:
        result = evaluate_run(plan, progress=progress)
        if index_version is not None:
            result = result.model_copy(update={"index_version": index_version})
        power = power_figures(result, plan.thresholds, plan.config)
    except KeyboardInterrupt as exc:
        raise Interrupted.by(
            exc, "before the run was evaluated in full: nothing was saved or spooled"
        ) from None
    try:
        recorded = record_verdict(
            result,
            plan.thresholds,
            store_url=store_url,
            baseline_run_id=baseline_run_id,
            save=save,
            dead_labels_baseline=plan.config.dead_labels_baseline_for(
                result.set_identifier, plan.retriever_name
            ),
        )
    except KeyboardInterrupt as exc:
        history = f"retrieval-eval runs list {result.set_identifier} {result.retriever}"
        raise Interrupted.by(
            exc,
            "while the run was being recorded: it is saved (or spooled) in full or not at all, "
            f"and `{history}` shows whether it was saved",
        ) from None
    # a store that just failed is not asked again (an unreachable one would cost its timeout)
    reachable = store_url if recorded.problem is None else None
    return PipelineRun(result, recorded, power, stored_judge_figures(result, reachable))


def run_evaluation(
    config: Config,
    set_name: str,
    retriever_name: str,
    *,
    progress: bool = False,
    **overrides: Any,
) -> RunResult:
    """Load, build, evaluate; the retriever is closed afterwards when it can be."""
    return evaluate_run(
        resolve_run(config, set_name, retriever_name, run=overrides), progress=progress
    )
