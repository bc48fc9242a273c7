"""Promoting as a workflow (``sets promote``; the labelling DAG's promote step): the next version
of a set from graded pairs, then, when the job asks, its stored runs re-judged under it.

plan: the set, the file it is written to, the judgments (a file's, the store's or both) and the
next version made in memory (:func:`retrieval_eval.labels.promote.promote`), as one batch;
execute: lint of the new version (the dead-label check asks ``retriever`` when given), storing
nothing; reduce: whether lint's errors or the promotion's problems block it; record: the set
file written whole (:func:`~retrieval_eval.labels.promote.write_promotion`: refused when the
file changed since the plan read it) unless blocked and not ``force``, then with ``rejudge``
every stored run of the set scored again against the new labels and stored
(:func:`retrieval_eval.workflows.rejudge.rejudge_runs`). A blocked version is an outcome, not an
error: the CLI prints lint's findings and exits 2, a DAG task fails
(:meth:`PromoteWorkflow.failure`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from pydantic import BaseModel, ConfigDict

from retrieval_eval.errors import InvalidInputError
from retrieval_eval.golden.models import ChangelogEntry, GoldenQuestionSet
from retrieval_eval.lint.models import LintReport
from retrieval_eval.workflows.base import Workflow, register
from retrieval_eval.workflows.rejudge import RejudgedRun, rejudge_set

if TYPE_CHECKING:
    from retrieval_eval.config.models import Config


class PromoteJob(BaseModel):
    """What to promote: the set, where its judgments come from (``judgments_file``, the store's
    with ``from_store``), where the new version goes (``output``; None: the set's own file),
    lint's retriever, whether lint's errors are overridden (``force``) and whether the set's
    stored runs are re-judged afterwards (``rejudge``). ``db``: ``--db`` as given."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    config_path: str | None = None
    db: str | None = None
    set: str
    judgments_file: str | None = None
    from_store: bool = False
    output: str | None = None
    force: bool = False
    retriever: str | None = None
    rejudge: bool = False


class PromoteBatch(BaseModel):
    """The set as read, its next version, what changed and what stops it."""

    read: GoldenQuestionSet
    promoted: GoldenQuestionSet
    entry: ChangelogEntry
    problems: list[str] = []
    source: str | None = None  # the file the set came from (None: not from a file)
    target: str  # the file the new version is written to


class PromotePart(PromoteBatch):
    """The batch with lint's report of the new version."""

    report: LintReport


class PromoteReduced(PromotePart):
    @property
    def blocked(self) -> bool:
        """Lint finds errors in the new version, or the promotion names a problem."""
        return self.report.has_errors or bool(self.problems)


class PromoteOutcome(PromoteReduced):
    """What was written (``written``: False when blocked and not forced) and re-judged."""

    written: bool
    rejudged: list[RejudgedRun] = []

    @property
    def set_identifier(self) -> str:
        return self.read.identifier


@register
class PromoteWorkflow(
    Workflow[PromoteJob, PromoteBatch, PromotePart, PromoteReduced, PromoteOutcome]
):
    """plan (the next version, in memory) → execute (lint it) → reduce (blocked?) → record
    (write it, re-judge the stored runs). ``check_target`` is called with the target path just
    before it is written (the CLI's check that names ``--output``)."""

    name: ClassVar[str] = "promote"
    job_type = PromoteJob
    batch_type = PromoteBatch
    part_type = PromotePart
    reduced_type = PromoteReduced
    outcome_type = PromoteOutcome
    check_target: Callable[[Path], None] | None = None

    def __init__(self, job: PromoteJob, *, config: Config | None = None) -> None:
        super().__init__(job)
        self._config = config

    @cached_property
    def config(self) -> Config:
        from retrieval_eval.config.models import load_config

        return self._config if self._config is not None else load_config(self.job.config_path)

    def _store_url(self) -> str:
        from retrieval_eval.store import resolve_store_url

        return resolve_store_url(self.job.db, self.config)

    def plan(self, max_batches: int = 1) -> list[PromoteBatch]:
        """The set, its file, the target's format, the judgments (file, then store) and the
        next version, checked in that order; one batch."""
        from retrieval_eval.labels.judgments import read_judgments
        from retrieval_eval.labels.promote import promote
        from retrieval_eval.workflows.labelled_run import resolve_set

        config = self.config
        golden = resolve_set(config, self.job.set)
        source = set_file(config, self.job.set, required=not self.job.output)
        target = Path(self.job.output) if self.job.output else source
        assert target is not None  # set_file raised when there is neither
        if target.suffix.lower() not in (".yaml", ".yml", ".json"):
            raise InvalidInputError(
                f"{target}: a versioned set is written as YAML or JSON (JSONL and CSV hold no "
                "version or changelog): give --output FILE.yaml"
            )
        rows = read_judgments(Path(self.job.judgments_file)) if self.job.judgments_file else []
        if self.job.from_store:
            from retrieval_eval.store.store import open_existing_store

            with open_existing_store(self._store_url()) as store:
                rows += store.judgments.read(golden.identifier)
        promotion = promote(golden, rows, relevance_level=config.run.relevance_level)
        return [
            PromoteBatch(
                read=golden,
                promoted=promotion.golden,
                entry=promotion.entry,
                problems=promotion.problems,
                source=str(source) if source is not None else None,
                target=str(target),
            )
        ]

    def execute(self, batch: PromoteBatch) -> PromotePart:
        """Lint the new version (against ``retriever`` when the job names one)."""
        from contextlib import nullcontext

        from retrieval_eval.lint import run_lint
        from retrieval_eval.workflows.labelled_run import opened_retriever

        config, name = self.config, self.job.retriever
        with opened_retriever(config, name) if name else nullcontext() as built:
            report = run_lint(
                batch.promoted,
                retriever=built,
                options=config.lint,
                thresholds=config.section_for(batch.read.identifier, name, "thresholds")
                if name
                else config.thresholds,
            )
        return PromotePart(**dict(batch), report=report)

    def reduce(self, parts: Sequence[PromotePart]) -> PromoteReduced:
        (part,) = parts
        return PromoteReduced(**dict(part))

    def record(self, reduced: PromoteReduced) -> PromoteOutcome:
        """Write the new version unless blocked and not forced; then re-judge if asked."""
        from retrieval_eval.labels.promote import write_promotion

        if reduced.blocked and not self.job.force:
            return PromoteOutcome(**dict(reduced), written=False)
        target = Path(reduced.target)
        if self.check_target is not None:
            self.check_target(target)
        source = Path(reduced.source) if reduced.source is not None else None
        write_promotion(reduced.read, reduced.promoted, target, source)
        rejudged = (
            rejudge_set(self.config, reduced.promoted, self.job.db) if self.job.rejudge else []
        )
        return PromoteOutcome(**dict(reduced), written=True, rejudged=rejudged)

    def failure(self, outcome: PromoteOutcome) -> Exception | None:
        """A blocked version that was not written (a DAG task fails with it; the CLI prints
        lint's findings instead)."""
        if outcome.written:
            return None
        return InvalidInputError(
            f"version {outcome.entry.version} of {outcome.set_identifier!r} not written: "
            f"lint found {outcome.report.count('error')} error(s) and the promotion "
            f"{len(outcome.problems)} problem(s); fix them, or promote with force"
        )


def set_file(config: Config, name: str, required: bool = True) -> Path | None:
    """The file a registered set (or a set file's path) came from; None when it came from no
    file (an installed package's) and ``required`` is off."""
    path = Path(name)
    if path.is_file():
        return path
    source = Path(config.golden_sets.source(name)) if name in config.golden_sets else None
    if source is None or not source.is_file():
        if not required:
            return None
        raise InvalidInputError(
            f"set {name!r} does not come from a file this command can rewrite: give --output FILE"
        )
    return source
