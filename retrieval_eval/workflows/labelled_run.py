"""The labelled run: one workflow the CLI's ``run`` and the evaluation DAG both drive.

:class:`LabelledRun` holds all of its orchestration, in the four steps of
:class:`~retrieval_eval.workflows.base.Workflow`: **plan** resolves the set, settings,
thresholds, store and retriever name (every option fails before retriever code is imported),
builds the retriever's cache once, lints the set when asked, and splits the questions into
batches by one rule (:func:`batch_count`); **execute** scores one batch with the retriever open
(and closed), checking the set did not change under the run, and asks for dead labels once;
**reduce** joins the batches into one :class:`RunResult` with its dead labels, lint findings and
power figure; **record** judges it against its baseline and saves it, or spools it when the store
is down (:class:`~retrieval_eval.workflows.recording.RunRecord`, the one record of a run).

The CLI runs it as one batch in one process (:func:`~retrieval_eval.workflows.base.run_in_process`);
Airflow's one adapter (``retrieval_eval.airflow.adapter``) maps ``execute`` over the batches.
The smaller helpers (resolve a set, open a retriever, resolve settings) serve other commands too.
Names resolve one way, down: the config, then the retriever registry it builds.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

from retrieval_eval.config.models import Config, RunOptions, Thresholds, load_config
from retrieval_eval.errors import Interrupted, InvalidInputError
from retrieval_eval.evaluation.labels import DeadLabels, attach_dead_labels
from retrieval_eval.evaluation.results import QuestionResult, RunResult, RunSettings
from retrieval_eval.evaluation.scoring import evaluate
from retrieval_eval.golden.loaders import SET_SUFFIXES, load_golden_set
from retrieval_eval.golden.models import GoldenQuestionSet
from retrieval_eval.lint.models import PowerReport
from retrieval_eval.retrievers.base import EvaluatableRetriever, checked_identifier
from retrieval_eval.retrievers.isolation import stdout_to_stderr
from retrieval_eval.safety.limits import quote
from retrieval_eval.workflows.base import Workflow, register
from retrieval_eval.workflows.recording import RunRecord

if TYPE_CHECKING:
    from retrieval_eval.labels.machine import JudgeFigures


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


def evaluate_opened(
    plan: Plan, retriever: EvaluatableRetriever, *, progress: bool = False
) -> RunResult:
    """Evaluate the plan's set with the retriever already open and find its dead labels (``sets
    pool --fresh`` also asks it for texts); the caller closes it."""
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
) -> RunRecord:
    """Judge the run against its baseline and save it (:func:`~retrieval_eval.workflows.recording.
    record_run`); with no store (``store_url`` None) it is judged as a first run, kept nowhere.
    A first run not to be saved is marked so (:attr:`Verdict.not_saved`): it does not become
    the baseline."""
    from retrieval_eval.verdicts.regression import detect_regression

    if store_url is None:
        verdict = detect_regression(result, None, thresholds)
        recorded = RunRecord(
            result=result,
            thresholds=thresholds,
            baseline_run_id=baseline_run_id,
            run_id=None,
            saved=False,
            verdict=verdict,
        )
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
    return recorded.model_copy(update={"verdict": verdict.model_copy(update={"not_saved": True})})


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

    try:
        store = open_store_to_read(store_url)
    except (NoStoreError, StoreUnavailableError):
        return None
    try:
        rows = store.judgments.read(result.set_identifier, gated=False)
    except StoreUnavailableError:
        return None
    finally:
        store.close()
    return judge_figures(result, rows)


def run_evaluation(
    config: Config,
    set_name: str,
    retriever_name: str,
    *,
    progress: bool = False,
    **overrides: Any,
) -> RunResult:
    """Load, build, evaluate (the labelled run's plan, execute and reduce, in this process, as
    one batch); the retriever is closed afterwards when it can be. Nothing is recorded."""
    job = LabelledRunJob(set=set_name, retriever=retriever_name, run=overrides)
    workflow = LabelledRun(job, config=config, progress=progress)
    return workflow.reduce([workflow.execute(batch) for batch in workflow.plan()]).result


LINT_FINDINGS_KEPT = 50  # findings stored with the run; the counts cover all of them


class LintFailed(InvalidInputError):
    """``lint: fail`` and the set's lint found errors: the run stops before any retrieval."""


def batch_count(questions: int, max_batches: int, min_batch_questions: int = 1) -> int:
    """How many batches a set of ``questions`` gets: one per ``min_batch_questions`` (rounded
    up), at least 1, at most ``max_batches`` (a ceiling) and the question count. Each batch is
    a task paying its own start-up in a DAG, so a small set gets few batches."""
    wanted = math.ceil(questions / max(1, min_batch_questions))
    return max(1, min(wanted, max_batches, questions))


def batch_ranges(questions: int, batches: int) -> list[tuple[int, int]]:
    """``[start, stop)`` ranges splitting ``questions`` into ``batches`` contiguous parts (the one
    rule: equal sizes rounded up, the last one shorter; an empty set is one empty batch)."""
    size = max(1, math.ceil(questions / batches))
    return [(i, min(i + size, questions)) for i in range(0, max(questions, 1), size)]


def lint_set(
    config: Config, golden: GoldenQuestionSet, retriever_name: str, mode: str
) -> dict[str, Any]:
    """Dead labels (one ``existing_ids`` call) and the set's other lint checks, as JSON stored
    with the run: ``{"mode", "dead_labels": DeadLabels JSON, "errors", "warnings",
    "findings": [...]}`` (at most :data:`LINT_FINDINGS_KEPT` findings).

    With ``mode == "fail"`` and any error (a dead label is one) it raises :class:`LintFailed`
    naming what was found. A lookup that fails is recorded (``checked: false``), not an error.
    """
    from retrieval_eval.evaluation.labels import dead_labels_or_failure

    with opened_retriever(config, retriever_name) as retriever:
        labels = dead_labels_or_failure(golden, retriever)
        findings = _lint_findings(golden, retriever, config, retriever_name, labels)
    errors = sum(1 for f in findings if f.get("severity") == "error")
    if labels.dead_ids and not any(f.get("check") == "dead_labels" for f in findings):
        errors += len(labels.stale_questions) + len(labels.partly_dead)
    outcome = {
        "mode": mode,
        "dead_labels": labels.model_dump(mode="json"),
        "errors": errors,
        "warnings": sum(1 for f in findings if f.get("severity") == "warning"),
        "findings": findings[:LINT_FINDINGS_KEPT],
    }
    if mode == "fail" and errors:
        from collections import Counter

        checks = Counter(f.get("check") for f in findings if f.get("severity") == "error")
        by_check = ", ".join(f"{check}: {n}" for check, n in sorted(checks.items()))
        raise LintFailed(
            f"lint: fail, and the golden set {golden.identifier!r} has {errors} error finding"
            f"{'s' if errors != 1 else ''} ({by_check or 'dead_labels'}); {labels.summary()}"
        )
    return outcome


def _lint_findings(
    golden: GoldenQuestionSet,
    retriever: EvaluatableRetriever,
    config: Config,
    retriever_name: str,
    labels: DeadLabels,
) -> list[dict[str, Any]]:
    """The lint package's findings for the set and retriever. No store: this runs before the
    evaluation, and it must not depend on the store being up. A check that raises becomes one
    warning finding: lint advises, it never keeps an evaluation from running. ``labels`` (the
    dead-label check already made) is reused, so the adapter's ``existing_ids`` is asked once.
    The power figures are at the depths the run will gate, as ``sets lint --retriever`` has
    them."""
    from retrieval_eval.lint import run_lint
    from retrieval_eval.safety.redaction import redact

    thresholds = config.section_for(golden.identifier, retriever_name, "thresholds")
    depths = config.section_for(golden.identifier, retriever_name, "run").depths
    try:
        report = run_lint(
            golden,
            retriever=retriever,
            options=config.lint,
            thresholds=thresholds,
            dead_labels=labels,
            depths=depths,
        )
    except Exception as exc:
        message = redact(f"lint could not run: {type(exc).__name__}: {exc}")[:300]
        return [{"check": "lint", "severity": "warning", "message": message}]
    return [f.model_dump(mode="json") for f in report.findings]


class LabelledRunJob(BaseModel):
    """What one labelled run evaluates and how it is recorded: JSON-able, so a DAG task rebuilds
    the workflow from it. The CLI fills it from its options; the DAG factory from the config's
    evaluation, and each task adds what its DAG run says (Params, run key, index version).

    ``run`` and ``thresholds`` override the config's settings and thresholds (None: not given).
    ``lint`` (``off``, ``warn``, ``fail``) lints the set before retrieval; the CLI's ``run``
    leaves it off. The fields after ``approve_baseline`` only Airflow's tasks read (batches,
    alerts, links); the store URL is never in a job (it may hold a password): a runner passes
    it to :class:`LabelledRun` at run time.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    config_path: str | None = None
    set: str
    retriever: str
    identifier: str | None = None
    run: dict[str, Any] = {}
    thresholds: dict[str, Any] = {}
    save: bool = True
    baseline_run_id: int | None = None
    index_version: str | None = None
    run_key: str | None = None
    started_at: datetime | None = None
    lint: Literal["off", "warn", "fail"] = "off"
    approve_baseline: bool = False
    # read by Airflow's tasks only
    max_batches: int = 1
    min_batch_questions: int = 1
    store_connection_id: str | None = None
    ui_base_url: str | None = None
    fail_on_regression: bool = False
    fail_on_dead_labels: bool = False
    alerts: list[dict[str, Any]] = []
    outlet: str | None = None  # the asset whose event carries the verdict (airflow/outcome.py)


class LabelledBatch(BaseModel):
    """Questions ``[start, stop)`` of the set whose labels fingerprint was ``fingerprint`` when
    planned; ``lint`` (the first batch only) carries the plan's lint outcome to reduce."""

    start: int
    stop: int
    fingerprint: str
    lint: dict[str, Any] | None = None


class LabelledPart(BaseModel):
    """One batch scored: the retriever's identifier, its questions' results, and (the first
    batch, when the plan did not lint) the dead labels the open retriever reported."""

    retriever: str
    questions: list[QuestionResult]
    started_at: datetime
    finished_at: datetime
    dead_labels: DeadLabels | None = None
    lint: dict[str, Any] | None = None


class LabelledReduced(BaseModel):
    """Every batch joined: the run's result, the thresholds it is judged with, its power."""

    result: RunResult
    thresholds: Thresholds
    power: PowerReport


@register
class LabelledRun(
    Workflow[LabelledRunJob, LabelledBatch, LabelledPart, LabelledReduced, RunRecord]
):
    """One labelled run: plan (resolve, prepare, lint, batches) → execute (score one batch) →
    reduce (one result, dead labels, lint, power) → record (verdict, save or spool).

    ``store_url`` returns the store's URL when called (None: no store; the run is judged as a
    first run, kept nowhere); ``check_store`` is called while the options are resolved, in their
    order, to refuse a bad store before the retriever is imported (default: ``store_url``).
    ``config`` spares a runner that loaded it already a second read; ``progress`` draws a bar.
    """

    name = "labelled_run"
    job_type = LabelledRunJob
    batch_type = LabelledBatch
    part_type = LabelledPart
    reduced_type = LabelledReduced
    outcome_type = RunRecord

    def __init__(
        self,
        job: LabelledRunJob,
        *,
        store_url: Callable[[], str | None] | None = None,
        check_store: Callable[[], object] | None = None,
        config: Config | None = None,
        progress: bool = False,
    ) -> None:
        super().__init__(job)
        self._store_url = store_url or (lambda: None)
        self._check_store = check_store if check_store is not None else store_url
        self._config = config
        self._resolved: Plan | None = None
        self.progress = progress

    @cached_property
    def config(self) -> Config:
        return self._config if self._config is not None else load_config(self.job.config_path)

    def resolve(self) -> Plan:
        """Every option checked in order (set, settings, thresholds, store, retriever name);
        nothing built. Once: the CLI calls it first, so a bad option costs no evaluation, and
        the plan reuses it."""
        if self._resolved is None:
            self._resolved = resolve_run(
                self.config,
                self.job.set,
                self.job.retriever,
                identifier=self.job.identifier,
                run=self.job.run,
                thresholds=self.job.thresholds,
                check_store=self._check_store,
            )
        return self._resolved

    @cached_property
    def golden_set(self) -> GoldenQuestionSet:
        """The set as resolved, or (a task that did not resolve every option) read again."""
        if self._resolved is not None:
            return self._resolved.golden_set
        return resolve_set(self.config, self.job.set, self.job.identifier)

    @cached_property
    def settings(self) -> RunSettings:
        if self._resolved is not None:
            return self._resolved.settings
        return resolve_settings(
            self.config, self.golden_set.identifier, self.job.retriever, **self.job.run
        )

    def plan(self, max_batches: int = 1) -> list[LabelledBatch]:
        """Check every option, build the retriever's cache once (the lexical index, not once per
        batch), lint the set when the job says so, and split the questions into at most
        ``max_batches`` batches (and the job's ``max_batches``, one per ``min_batch_questions``).
        """
        golden = self.resolve().golden_set
        self.config.retriever_registry.prepare(self.job.retriever)
        lint = None
        if self.job.lint != "off":
            lint = lint_set(self.config, golden, self.job.retriever, self.job.lint)
        count = len(golden.questions)
        wanted = batch_count(
            count, min(max_batches, self.job.max_batches), self.job.min_batch_questions
        )
        return [
            LabelledBatch(
                start=start,
                stop=stop,
                fingerprint=golden.fingerprint,
                lint=lint if number == 0 else None,
            )
            for number, (start, stop) in enumerate(batch_ranges(count, wanted))
        ]

    def execute(self, batch: LabelledBatch) -> LabelledPart:
        """Score the batch's questions with the retriever open (closed afterwards); the first
        batch, unless the plan linted, also asks for dead labels while it is open. A set whose
        labels changed since the plan fails: the run would mix two sets."""
        from retrieval_eval.evaluation.labels import can_check_labels, dead_labels_or_failure
        from retrieval_eval.evaluation.scoring import _progress_bar, score_questions

        golden = self.golden_set
        if golden.fingerprint != batch.fingerprint:
            raise InvalidInputError(
                f"golden set {golden.identifier!r} changed while the run was in progress "
                "(labels fingerprint differs); run it again"
            )
        questions = golden.questions[batch.start : batch.stop]
        try:
            with opened_retriever(self.config, self.job.retriever) as retriever:
                checked_identifier(retriever)
                started = datetime.now(UTC)
                with _progress_bar(len(questions), self.progress, retriever.identifier) as step:
                    results = score_questions(questions, retriever, self.settings, progress=step)
                finished = datetime.now(UTC)
                labels = None
                if batch.start == 0 and batch.lint is None and can_check_labels(retriever):
                    labels = dead_labels_or_failure(golden, retriever)
        except KeyboardInterrupt as exc:
            raise Interrupted.by(
                exc, "before the run was evaluated in full: nothing was saved or spooled"
            ) from None
        return LabelledPart(
            retriever=retriever.identifier,
            questions=results,
            started_at=started,
            finished_at=finished,
            dead_labels=labels,
            lint=batch.lint,
        )

    @classmethod
    def brief(cls, outcome: dict[str, Any]) -> dict[str, Any] | None:
        """The record's JSON without its per-question rows: the verdict, the figures and the
        ids, all a branch task reads (at 5,000 questions it spares each ~0.8 s of XCom)."""
        result = {key: value for key, value in outcome["result"].items() if key != "questions"}
        return {**outcome, "result": result}

    def reduce(self, parts: Sequence[LabelledPart]) -> LabelledReduced:
        """One RunResult of every batch (in plan order), with the run key, the index build, the
        dead labels (the lint's when the plan linted) and the stored lint findings; then its
        thresholds and power figure."""
        from retrieval_eval.evaluation.scoring import summarise_set

        golden = self.golden_set
        questions = [question for part in parts for question in part.questions]
        if len(questions) != len(golden.questions):
            raise InvalidInputError(
                f"expected {len(golden.questions)} question results, got {len(questions)}"
            )
        first = parts[0] if parts else None
        result = summarise_set(
            golden,
            questions,
            retriever=first.retriever if first else self.job.retriever,
            settings=self.settings,
            started_at=self.job.started_at or (first.started_at if first else None),
            finished_at=max((part.finished_at for part in parts), default=None),
            run_key=self.job.run_key,
        )
        update: dict[str, Any] = {}
        if self.job.index_version is not None:
            update["index_version"] = self.job.index_version
        lint = first.lint if first else None
        if lint:
            labels = lint.get("dead_labels")
            update["dead_labels"] = DeadLabels.model_validate(labels) if labels else None
            update["lint"] = {k: v for k, v in lint.items() if k != "dead_labels"}
        elif first is not None and first.dead_labels is not None:
            update["dead_labels"] = first.dead_labels
        if update:
            result = result.model_copy(update=update)
        if self._resolved is not None:
            thresholds = self._resolved.thresholds
        else:
            thresholds = resolve_thresholds(
                self.config, golden.identifier, self.job.retriever, **self.job.thresholds
            )
        return LabelledReduced(
            result=result,
            thresholds=thresholds,
            power=power_figures(result, thresholds, self.config),
        )

    def record(self, reduced: LabelledReduced) -> RunRecord:
        """Judge the run against its baseline and save it, or spool it when the store is down
        (the record's :meth:`~retrieval_eval.workflows.recording.Recorded.failure` says so);
        with no store, judge it as a first run. An interrupt says what was saved."""
        result = reduced.result
        try:
            record = record_verdict(
                result,
                reduced.thresholds,
                store_url=self._store_url(),
                baseline_run_id=self.job.baseline_run_id,
                save=self.job.save,
                dead_labels_baseline=self.config.dead_labels_baseline_for(
                    result.set_identifier, self.job.retriever
                ),
                approve_labels_change=self.job.approve_baseline,
            )
        except KeyboardInterrupt as exc:
            history = f"retrieval-eval runs list {result.set_identifier} {result.retriever}"
            raise Interrupted.by(
                exc,
                "while the run was being recorded: it is saved (or spooled) in full or not at "
                f"all, and `{history}` shows whether it was saved",
            ) from None
        return record.model_copy(update={"power": reduced.power})

    def failure(self, outcome: RunRecord) -> Exception | None:
        """The store's failure when the run was spooled instead of saved (a DAG task raises it,
        so it retries; the CLI exits with it after the report)."""
        return outcome.failure()
