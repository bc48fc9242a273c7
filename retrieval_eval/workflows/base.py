"""The one shape every workflow has, so the CLI and Airflow drive each the same way.

A workflow is built from its job (a pydantic model: what to run, JSON-able, so an Airflow task
rebuilds it in another process) and runs in four steps: :meth:`Workflow.plan` splits the work
into batches, :meth:`Workflow.execute` does one batch, :meth:`Workflow.reduce` joins the
batches' parts, :meth:`Workflow.record` stores what was reduced and returns the outcome. Every
batch, part, reduced value and outcome is a pydantic model too: its JSON is the XCom payload.

The CLI calls :func:`run_in_process` (one batch, one process); Airflow's one generic adapter
maps ``execute`` over the batches and calls the other steps as tasks. Workflows register by
name in :data:`WORKFLOWS` (registered, not switched), so the adapter finds them by name.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel

JobT = TypeVar("JobT", bound=BaseModel)
BatchT = TypeVar("BatchT", bound=BaseModel)
PartT = TypeVar("PartT", bound=BaseModel)
ReducedT = TypeVar("ReducedT", bound=BaseModel)
OutcomeT = TypeVar("OutcomeT", bound=BaseModel)


class Workflow(ABC, Generic[JobT, BatchT, PartT, ReducedT, OutcomeT]):
    """plan → execute (per batch) → reduce → record, over one job; no click, no Airflow."""

    name: ClassVar[str]
    job_type: ClassVar[type[BaseModel]]
    batch_type: ClassVar[type[BaseModel]]
    part_type: ClassVar[type[BaseModel]]
    reduced_type: ClassVar[type[BaseModel]]
    outcome_type: ClassVar[type[BaseModel]]

    def __init__(self, job: JobT) -> None:
        self.job = job

    @abstractmethod
    def plan(self, max_batches: int = 1) -> list[BatchT]:
        """The work split into at most ``max_batches`` batches (the CLI asks for one)."""

    @abstractmethod
    def execute(self, batch: BatchT) -> PartT:
        """Do one batch; safe to retry (it stores nothing)."""

    @abstractmethod
    def reduce(self, parts: Sequence[PartT]) -> ReducedT:
        """Join the batches' parts, in plan order."""

    @abstractmethod
    def record(self, reduced: ReducedT) -> OutcomeT:
        """Store what was reduced (or spool it when the store is down); the outcome says what."""

    @classmethod
    def brief(cls, outcome: dict[str, Any]) -> dict[str, Any] | None:
        """A small view of the outcome's JSON for the tasks that read only its verdict and
        figures (Airflow's branch tasks pull it instead of the whole record); None: none."""
        return None

    def failure(self, outcome: OutcomeT) -> Exception | None:
        """The error an outcome ends with although it was recorded (a store that was down and
        the work spooled): a DAG task raises it to retry, the CLI after its report. None: done.
        """
        return None


WORKFLOWS: dict[str, type[Workflow]] = {}  # type: ignore[type-arg]


def register(cls: type[Workflow]) -> type[Workflow]:  # type: ignore[type-arg]
    """Class decorator: make a workflow findable by its ``name`` (Airflow's adapter uses it)."""
    WORKFLOWS[cls.name] = cls
    return cls


def run_in_process(
    workflow: Workflow[JobT, BatchT, PartT, ReducedT, OutcomeT],
    *,
    on_batch: Callable[[int, int], None] | None = None,
) -> OutcomeT:
    """The CLI's way: every step in this process, the work as one batch."""
    batches = workflow.plan(max_batches=1)
    parts = []
    for number, batch in enumerate(batches, start=1):
        parts.append(workflow.execute(batch))
        if on_batch is not None:
            on_batch(number, len(batches))
    return workflow.record(workflow.reduce(parts))
