"""One replay, start to end, as the :class:`Replay` workflow: the CLI's ``replay`` runs it in one
process, the replay DAG runs its steps as tasks.

plan: the sample (built and stored once) split into batches → execute: the retriever asked one
batch, each query as captured (:func:`~retrieval_eval.workflows.samples.resolve_texts`), keys and
ids kept only → reduce: the batches joined into one :class:`~retrieval_eval.replay.record.
ReplayRecord` and given the rankings it is compared with → record: saved in one transaction,
or spooled when the store cannot be reached.

Compared with, in order: ``against`` (another retriever, replayed now: the "before" side),
``against_run`` (a stored replay of the same sample), else the previous valid replay of this
sample and retriever (so a nightly replay shows what last night's rebuild moved). Replays of
different samples are never compared: ``against_run`` of another sample is an error. The
``against`` retriever's rankings are saved as its own replay of the sample (compared with the one
of its series before it), which the replay's ``compared_id`` names: its page and ``sets pool
--replay`` read both rankings there.

A replay the store cannot take is spooled (the record's JSON is the spool file) and ``db
flush`` compares and saves it later (:func:`save_spooled`), as for runs. A replay started while
the store is unreachable draws its sample from the log again and is compared when it is saved.
"""

from __future__ import annotations

import contextlib
import math
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from retrieval_eval.errors import InvalidInputError, StoreUnavailableError
from retrieval_eval.replay.compare import DriftThresholds, Ranked
from retrieval_eval.replay.record import Ranking, ReplayRecord, packed
from retrieval_eval.replay.run import ReplaySettings, replay_sample
from retrieval_eval.replay.samples import QuerySample, SampleSpec
from retrieval_eval.workflows.base import Workflow, register
from retrieval_eval.workflows.samples import resolve_texts, stored_sample

if TYPE_CHECKING:
    from retrieval_eval.config.models import Config
    from retrieval_eval.store import Store


class ReplayJob(BaseModel):
    """What to replay and how: the options of ``retrieval-eval replay`` and of a replay DAG.

    ``store_url`` (None: no store at all; nothing saved, nothing compared but ``against``) is
    never serialised: it may hold a password, and a DAG's task resolves it again from its
    connection."""

    model_config = ConfigDict(frozen=True)

    config_path: str | None = None
    sample: str
    retriever: str
    against: str | None = None
    against_run: int | None = None
    k: int | None = None
    p: float | None = None
    index_version: str | None = None
    run_key: str | None = None
    save: bool = True
    store_url: str | None = Field(default=None, exclude=True, repr=False)
    spool_dir: Path | None = None
    max_batches: int = 1
    min_batch_questions: int = 1


class ReplayBatch(BaseModel):
    """Queries ``[start, stop)`` of the sample with this fingerprint (stored as ``sample_id``;
    None: drawn while the store was unreachable)."""

    sample_id: int | None
    fingerprint: str
    start: int
    stop: int


class ReplayPart(BaseModel):
    """One batch's rankings, keys and ids only (no query text): the retriever's (``after``) and,
    with ``against``, the other retriever's (``before``)."""

    sample_id: int | None
    fingerprint: str
    after: list[Ranking]
    before: list[Ranking] | None = None


@register
class Replay(Workflow[ReplayJob, ReplayBatch, ReplayPart, ReplayRecord, ReplayRecord]):
    """A replay of a query sample by a retriever, compared and saved (see the module's text).

    In one process, ``config`` (the loaded config) and ``store`` (an opened store, released
    while the retrievers answer) may be given; otherwise each step loads the config from
    ``job.config_path`` and opens the store at ``job.store_url``, as a DAG's task does."""

    name = "replay"
    job_type = ReplayJob
    batch_type = ReplayBatch
    part_type = ReplayPart
    reduced_type = ReplayRecord
    outcome_type = ReplayRecord

    def __init__(
        self, job: ReplayJob, *, config: Config | None = None, store: Store | None = None
    ) -> None:
        super().__init__(job)
        self._config = config
        self._store = store
        self._samples: dict[str, tuple[int | None, QuerySample]] = {}  # by fingerprint

    @property
    def config(self) -> Config:
        if self._config is None:
            from retrieval_eval.config.models import load_config

            self._config = load_config(self.job.config_path)
        return self._config

    @contextlib.contextmanager
    def _opened(self) -> Iterator[Store | None]:
        """The given store, else one opened at ``job.store_url`` for this step, else None."""
        if self._store is not None or self.job.store_url is None:
            yield self._store
            return
        from retrieval_eval.store import open_store

        with open_store(self.job.store_url) as store:
            yield store

    def _may_spool(self) -> bool:
        """Whether an unreachable store is worked around (the replay spooled), not raised."""
        return self.job.save and self.job.store_url is not None

    def plan(self, max_batches: int = 1) -> list[ReplayBatch]:
        """Draw and store the sample (once; drawn from its log again when the store is
        unreachable and the replay can be spooled), check ``against_run``, and split the
        sample into at most ``max_batches`` batches (and the job's ``max_batches``) of
        ``min_batch_questions`` queries or more. With more than one batch, the retrievers'
        caches are filled first, once."""
        job = self.job
        max_batches = min(max_batches, job.max_batches)
        if job.against is not None and job.against_run is not None:
            raise InvalidInputError("give --against RETRIEVER or --against-run ID, not both")
        config = self.config
        drawn: tuple[int | None, QuerySample] | None = None
        try:
            with self._opened() as store:
                sample_id, sample, _spec = stored_sample(config, store, job.sample)
                drawn = sample_id, sample
                if job.against_run is not None:
                    _asked_replay(store, job.against_run, sample_id)
                if store is not None:
                    store.release()  # no connection is held open while the retrievers answer
        except StoreUnavailableError as exc:
            if job.against_run is not None and job.store_url is not None:
                raise StoreUnavailableError(
                    f"--against-run {job.against_run} reads a stored replay, and the result store "
                    f"is unreachable: nothing was replayed ({exc})"
                ) from None
            if not self._may_spool():
                raise
        if drawn is None:  # as if it had been down from the start: spooled, compared when saved
            _, sample, _spec = stored_sample(config, None, job.sample)
            drawn = None, sample
        sample_id, sample = drawn
        self._samples[sample.fingerprint] = drawn
        if max_batches > 1:
            for name in filter(None, (job.retriever, job.against)):
                config.retriever_registry.prepare(name)
        return [
            ReplayBatch(sample_id=sample_id, fingerprint=sample.fingerprint, start=a, stop=b)
            for a, b in batch_ranges(len(sample.queries), max_batches, job.min_batch_questions)
        ]

    def _sample(self, sample_id: int | None, fingerprint: str) -> tuple[int | None, QuerySample]:
        """The sample planned: this process's, else the stored one, else (stored nowhere, or the
        store unreachable) drawn from its log again; one that is not the one planned is an
        error (InvalidInputError; StoreUnavailableError naming the store's failure)."""
        if fingerprint in self._samples:
            return self._samples[fingerprint]
        name = self.job.sample
        failure: StoreUnavailableError | None = None
        sample: QuerySample | None = None
        if sample_id is not None:
            try:
                with self._opened() as store:
                    if store is not None:
                        sample = store.replays.get_sample(sample_id)
            except StoreUnavailableError as exc:
                if not self._may_spool():
                    raise
                failure, sample_id = exc, None
        if sample is None:
            _, sample, _spec = stored_sample(self.config, None, name)
            sample_id = None
        if sample.fingerprint != fingerprint:
            if failure is not None:
                raise StoreUnavailableError(
                    f"{failure}; the replay was not spooled: query sample {name!r} drawn from "
                    "its log again is not the one replayed (the log changed); the rankings stay "
                    "in this DAG run, and the task retries"
                ) from failure
            raise InvalidInputError(
                f"query sample {name!r} changed while the replay was in progress; trigger the "
                "DAG again"
            )
        self._samples[fingerprint] = (sample_id, sample)
        return sample_id, sample

    def execute(self, batch: ReplayBatch) -> ReplayPart:
        """Ask the retriever (and ``against``) the batch's queries, as captured."""
        job, config = self.job, self.config
        _, sample = self._sample(batch.sample_id, batch.fingerprint)
        part = replace(sample, queries=sample.queries[batch.start : batch.stop])
        spec = config.sample_spec(job.sample)
        settings = replay_settings(config, job.sample, job.retriever, k=job.k)
        after = rankings_of(config, part, spec, job.retriever, settings)
        before = (
            None if job.against is None else rankings_of(config, part, spec, job.against, settings)
        )
        return ReplayPart.model_construct(  # made here: validated when read from an XCom
            sample_id=batch.sample_id,
            fingerprint=batch.fingerprint,
            after=packed(after),
            before=None if before is None else packed(before),
        )

    def reduce(self, parts: Sequence[ReplayPart]) -> ReplayRecord:
        """The batches joined into one record (its run key the job's, else a new one; its date
        now) and given what it is compared with: ``against``'s rankings, else the stored
        replay's (``against_run``, else the one before it; none when the store is
        unreachable: compared when ``db flush`` saves it)."""
        from retrieval_eval import installed_version

        job, config = self.job, self.config
        sample_id, sample = self._sample(parts[0].sample_id, parts[0].fingerprint)
        after = [r for part in parts for r in part.after]
        if len(after) != len(sample.queries):
            raise InvalidInputError(
                f"expected {len(sample.queries)} rankings, got {len(after)}; trigger the DAG again"
            )
        settings = replay_settings(config, job.sample, job.retriever, k=job.k)
        record = ReplayRecord.of_sample(
            sample,
            run_key=job.run_key or uuid.uuid4().hex,
            started_at=datetime.now(UTC),
            retriever=job.retriever,
            k=settings.k,
            p=persistence(config, job.sample, job.retriever, job.p),
            thresholds=drift_thresholds(config, job.sample, job.retriever),
            rankings=after,
            compare_with=(
                "retriever" if job.against else "replay" if job.against_run else "previous"
            ),
            compared_id=job.against_run,
            against_retriever=job.against,
            before=[r for part in parts for r in part.before or []] if job.against else None,
            index_version=job.index_version,
            package_version=installed_version(),
            sample_id=sample_id,
        )
        if job.against is not None or sample_id is None:
            return record
        try:
            with self._opened() as store:
                return record if store is None else compared(store, record)
        except StoreUnavailableError:
            if not self._may_spool() or job.against_run is not None:
                raise
            return record  # compared with the replay before it once `db flush` saves it

    def record(self, reduced: ReplayRecord) -> ReplayRecord:
        """Save the replay (with ``save``), or spool it when the store cannot be reached (the
        record then says where it went and why: ``spool_path``, ``problem``, ``notes``)."""
        if not self.job.save:
            return reduced
        if self.job.store_url is None:
            return reduced if self._store is None else save_record(self._store, reduced)
        return record_replay(
            reduced, store_url=self.job.store_url, spool_dir=self.job.spool_dir, store=self._store
        )

    def failure(self, outcome: ReplayRecord) -> Exception | None:
        """The store's failure when the replay was spooled instead of saved (its ``problem``:
        where it went and the command that saves it): a DAG task raises it, so it retries; the
        CLI exits with it after the report."""
        from retrieval_eval.workflows.recording import store_error

        if outcome.problem is None:
            return None
        return store_error(outcome.problem, outcome.problem_exit_code)


def batch_ranges(count: int, max_batches: int, min_batch: int = 1) -> list[tuple[int, int]]:
    """``[start, stop)`` of each batch of ``count`` queries: one batch per ``min_batch``
    (rounded up), at least one (an empty sample is one empty batch), at most ``max_batches``."""
    batches = max(1, min(math.ceil(max(count, 1) / min_batch), max_batches, max(count, 1)))
    size = max(1, math.ceil(count / batches))
    return [(i, min(i + size, count)) for i in range(0, max(count, 1), size)]


def replay_settings(
    config: Config, sample: str, retriever: str, *, k: int | None = None
) -> ReplaySettings:
    """The config's ``replay:`` options, the series' own, then ``k`` from the command line."""
    spec = config.replay_spec(sample, retriever)
    options = spec.replay if spec is not None and spec.replay is not None else config.replay
    return ReplaySettings(
        k=k or options.k, timeout_s=options.timeout_s, max_concurrency=options.max_concurrency
    )


def drift_thresholds(config: Config, sample: str, retriever: str) -> DriftThresholds:
    spec = config.replay_spec(sample, retriever)
    return spec.drift if spec is not None and spec.drift is not None else config.drift


def persistence(config: Config, sample: str, retriever: str, p: float | None = None) -> float:
    if p is not None:
        return p
    spec = config.replay_spec(sample, retriever)
    return (spec.replay if spec is not None and spec.replay is not None else config.replay).p


def rankings_of(
    config: Config, sample: QuerySample, spec: SampleSpec, retriever: str, settings: ReplaySettings
) -> list[Ranked]:
    """``retriever``'s rankings of every query of ``sample`` (the retriever closed after)."""
    from retrieval_eval.workflows.labelled_run import opened_retriever

    texts = resolve_texts(sample, spec, config.base_dir)
    with opened_retriever(config, retriever) as built:
        return replay_sample(sample, texts, built, settings)


def _asked_replay(store: Store | None, replay_id: int, sample_id: int | None) -> None:
    """``--against-run``: a stored replay of the same sample (InvalidInputError otherwise)."""
    if store is None:
        raise InvalidInputError("--against-run reads a stored replay: it needs a store")

    stored = store.replays.get(replay_id)
    if stored.sample_id != sample_id:
        raise InvalidInputError(
            f"replay {replay_id} replayed sample {stored.sample_name!r} "
            f"(another sample or another draw of it): replays of different samples are "
            "never compared; replay the same sample, or compare with --against RETRIEVER"
        )


def compared(store: Store, record: ReplayRecord, earlier: datetime | None = None) -> ReplayRecord:
    """``record`` given the stored rankings it is compared with: ``compared_id``'s (asked for
    by ``--against-run``), else the previous valid replay's of (sample, retriever) (one that
    ran before ``earlier``, when given: a spooled replay saved late is compared with the one
    before it); none for the first of a series. ``against`` rankings are kept as they are."""
    if record.compare_with == "retriever":
        return record
    assert record.sample_id is not None
    if record.compare_with == "replay":
        assert record.compared_id is not None
        _asked_replay(store, record.compared_id, record.sample_id)
        stored = store.replays.get(record.compared_id)
    else:
        found = store.replays.previous(record.sample_id, record.retriever, earlier)
        if found is None:
            return record.but(before=None, compared_id=None, compared_index_version=None)
        stored = found
    return record.but(
        before=packed(store.replays.rankings(stored.id)),
        compared_id=stored.id,
        compared_index_version=stored.index_version,
    )


def save_record(store: Store, record: ReplayRecord) -> ReplayRecord:
    """Store a replay (its sample first when it is not stored yet; the ``against`` retriever's
    rankings as that retriever's own replay) and give the record its ids."""
    if record.sample_id is None:  # drawn while the store was unreachable
        record = record.but(sample_id=store.replays.save_sample(record.sample))
    kept_before = record.compare_with == "retriever" and record.before is not None
    if kept_before and record.compared_id is None:
        other = _save_before(store, record)
        record = record.but(compared_id=other.replay_id, compared_index_version=other.index_version)
    return record.but(replay_id=store.replays.save(record))


def _save_before(store: Store, record: ReplayRecord) -> ReplayRecord:
    """The ``against`` retriever's rankings saved as its own replay of the sample (compared
    with the one of its series before it, by this replay's p, k and limits; its run key made
    from this replay's, so saving again is idempotent)."""
    assert record.before is not None and record.against_retriever is not None
    other = record.but(
        retriever=record.against_retriever,
        rankings=record.before,
        before=None,
        compare_with="previous",
        compared_id=None,
        against_retriever=None,
        # a name of its own (a DAG run's key names the DAG run the dashboard links to)
        run_key=uuid.uuid5(uuid.NAMESPACE_OID, f"before {record.run_key}").hex,
    )
    return save_record(store, compared(store, other, earlier=record.started_at))


def record_replay(
    record: ReplayRecord,
    *,
    store_url: str,
    spool_dir: Path | None = None,
    store: Store | None = None,
) -> ReplayRecord:
    """Save the replay in one transaction into ``store`` (opened from ``store_url`` when None);
    when it cannot be reached, keep it as a run is kept (:func:`~retrieval_eval.store.spool.
    keep_spooled`: the spool, else a new folder of the temporary folder) and say so in ``notes``,
    ``problem`` and ``spool_path`` (``db flush`` compares and saves it later). Never raises
    StoreUnavailableError."""
    from retrieval_eval.store import mask_url, open_store
    from retrieval_eval.store.spool import keep_spooled
    from retrieval_eval.store.url import parse_store_url, store_fingerprint
    from retrieval_eval.workflows.recording import not_saved

    try:
        if store is not None:
            return save_record(store, record)
        with open_store(store_url) as opened:
            return save_record(opened, record)
    except StoreUnavailableError as exc:
        entry = record.but(
            store=mask_url(parse_store_url(store_url)),
            store_fingerprint=store_fingerprint(store_url),
        )
        kept = keep_spooled(entry, spool_dir)
        saves = f"compares it with {_compared_later(record)} and stores it in {mask_url(store_url)}"
        problem = not_saved(exc, kept, "replay", saves)
        return entry.but(
            spool_path=kept.path,
            notes=[*record.notes, f"Result store unreachable: {problem}."],
            problem=problem,
            problem_exit_code=exc.exit_code,
        )


def _compared_later(record: ReplayRecord) -> str:
    if record.compare_with == "retriever":
        return record.against or "the other retriever"
    if record.compare_with == "replay":
        return f"replay {record.compared_id}"
    return "the replay of its series before it"


def save_spooled(store: Store, entry: ReplayRecord) -> int:
    """Compare a spooled replay as it would have been compared when it ran, and save it (its
    sample first, once); return its id. UnknownNameError when the replay it was compared with
    by request is gone (pruned)."""
    record = entry.but(sample_id=store.replays.save_sample(entry.sample), replay_id=None)
    if record.compare_with == "retriever":
        record = record.but(compared_id=None, compared_index_version=None)
    else:
        record = compared(store, record, earlier=record.started_at)
    replay_id = save_record(store, record).replay_id
    assert replay_id is not None
    return replay_id


def stored_record(store: Store, replay_id: int) -> ReplayRecord:
    """A stored replay compared again with the replay it was compared with when it ran (its
    ``compared_id``: the replay before it, or the ``--against`` retriever's), as the record a
    replay draft is made from (``sets pool --replay``); a replay compared with nothing (the
    first of its series) is an error saying so."""
    stored = store.replays.get(replay_id)
    if stored.compared_id is None:
        raise InvalidInputError(
            f"replay {replay_id} ({stored.sample_name} by {stored.retriever}) was compared with no "
            "stored replay (the first of its series, or compared with another retriever before "
            "retrieval-eval kept that retriever's rankings): no rankings moved to pool; give a "
            f"later replay of the series (`retrieval-eval drift {stored.sample_name} "
            f"{stored.retriever}` lists them), or replay with --against RETRIEVER again"
        )
    compared_with = store.replays.get(stored.compared_id)
    return ReplayRecord.of_sample(
        store.replays.get_sample(stored.sample_id),
        run_key=stored.run_key,
        started_at=stored.run_date,
        retriever=stored.retriever,
        k=stored.k,
        p=stored.p,
        rankings=packed(store.replays.rankings(replay_id)),
        compare_with="replay",
        compared_id=stored.compared_id,
        before=packed(store.replays.rankings(stored.compared_id)),
        compared_index_version=compared_with.index_version,
        index_version=stored.index_version,
        package_version=stored.package_version,
        sample_id=stored.sample_id,
        replay_id=replay_id,
    )


def run_replay(
    config: Config,
    store: Store | None,
    sample: str,
    retriever: str,
    **options: object,
) -> ReplayRecord:
    """The :class:`Replay` of ``sample`` by ``retriever`` in this process over an opened
    ``store`` (None: no store), ``options`` those of :class:`ReplayJob`: for callers that hold
    a config and a store already (tests, notebooks)."""
    from retrieval_eval.workflows.base import run_in_process

    job = ReplayJob(sample=sample, retriever=retriever, **options)  # type: ignore[arg-type]
    return run_in_process(Replay(job, config=config, store=store))
