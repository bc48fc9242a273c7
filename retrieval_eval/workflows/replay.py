"""One replay, start to end: the sample (built and stored once), the retriever's rankings, the
rankings compared with, the comparison and its verdict, saved in one transaction. The CLI's
``replay`` and the DAG's replay tasks both call these steps.

Compared with, in order: ``against`` (another retriever, replayed now: the "before" side), ``against_run`` (a stored
replay of the same sample), else the previous valid replay of this sample and retriever (so a
nightly replay shows what last night's rebuild moved). Replays of different samples are never
compared: ``against_run`` of another sample is an error. The ``against`` retriever's rankings are
saved as its own replay of the sample (compared with the one of its series before it), which the
replay's ``compared_id`` names: its page and ``sets pool --replay`` read both rankings there.

Saving is :func:`record_replay`: one transaction, or, when the store cannot be reached, a spool
file (:class:`~retrieval_eval.store.spool.SpooledReplay`) that ``db flush`` compares and saves
later, as for runs (:func:`save_spooled`). A replay started while the store is unreachable draws
its sample from the log again and is compared when it is saved.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from retrieval_eval.errors import InvalidInputError, StoreUnavailableError
from retrieval_eval.replay.carry import carried
from retrieval_eval.replay.compare import Comparison, DriftThresholds, Ranked, compare
from retrieval_eval.replay.run import ReplaySettings, replay_sample
from retrieval_eval.replay.samples import (
    QuerySample,
    SampledQuery,
    SampleSpec,
    build_sample,
    resolve_texts,
)

if TYPE_CHECKING:
    from retrieval_eval.config.models import Config
    from retrieval_eval.store import Store
    from retrieval_eval.store.replays import StoredReplay
    from retrieval_eval.store.spool import SpooledRanking, SpooledReplay


@dataclass(frozen=True)
class ReplayOutcome:
    """What a replay produced, saved, spooled (``spool_path``) or neither."""

    run_key: str
    sample_name: str
    sample_id: int | None
    sample: QuerySample
    retriever: str
    rankings: Sequence[Ranked]
    comparison: Comparison
    against: str | None
    compared: StoredReplay | None
    index_version: str | None
    replay_id: int | None = None
    notes: tuple[str, ...] = field(default=())
    thresholds: DriftThresholds = field(default_factory=DriftThresholds)
    # the other retriever's rankings when compared with one (``against``), replayed now
    before: Sequence[Ranked] | None = None
    before_retriever: str | None = None  # that retriever's name
    against_run: int | None = None  # compared with this stored replay, by request
    run_date: datetime = field(default_factory=lambda: datetime.now(UTC))
    package_version: str | None = None
    spool_path: Path | None = None
    # the store's failure and where the replay went (None when saved), and its exit code: 3,
    # or 2 for a store a newer retrieval-eval migrated
    problem: str | None = None
    problem_exit_code: int = 3


def stored_sample(
    config: Config, store: Store | None, name: str, *, refresh: bool = False
) -> tuple[int | None, QuerySample, SampleSpec]:
    """The newest stored sample ``name`` (built from its log and stored when there is none, or
    with ``refresh``); without a store, built anew."""
    from retrieval_eval.store.replays import latest_sample, save_sample

    spec = config.sample_spec(name)
    if store is not None and not refresh:
        found = latest_sample(store, name)
        if found is not None:
            return found[0], found[1], spec
    sample = build_sample(name, spec, config.base_dir)
    sample_id = save_sample(store, sample) if store is not None else None
    return sample_id, sample, spec


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


def compared_rankings(
    store: Store | None,
    sample_id: int | None,
    retriever: str,
    against_run: int | None,
    before: datetime | None = None,
) -> tuple[list[Ranked] | None, StoredReplay | None]:
    """The stored rankings a replay is compared with: ``against_run``'s, else the previous
    valid replay's of (sample, retriever) (one that ran before ``before``, when given: a spooled
    replay saved late is compared with the one before it); none for the first of a series."""
    from retrieval_eval.store.replays import get_replay, previous_replay, rankings

    if store is None:
        if against_run is not None:
            raise InvalidInputError("--against-run reads a stored replay: it needs a store")
        return None, None
    if against_run is not None:
        stored = get_replay(store, against_run)
        if stored.sample_id != sample_id:
            raise InvalidInputError(
                f"replay {against_run} replayed sample {stored.sample_name!r} "
                f"(another sample or another draw of it): replays of different samples are "
                "never compared; replay the same sample, or compare with --against RETRIEVER"
            )
        return rankings(store, stored.id), stored
    if sample_id is None:
        return None, None
    previous = previous_replay(store, sample_id, retriever, before)
    if previous is None:
        return None, None
    return rankings(store, previous.id), previous


def run_replay(
    config: Config,
    store: Store | None,
    sample_name: str,
    retriever: str,
    *,
    against: str | None = None,
    against_run: int | None = None,
    k: int | None = None,
    p: float | None = None,
    index_version: str | None = None,
    run_key: str | None = None,
    save: bool = True,
    store_url: str | None = None,
    spool_dir: Path | None = None,
) -> ReplayOutcome:
    """Replay ``sample_name`` with ``retriever``, compare, judge and (with ``save``) store it.

    What the store holds for it (the sample, the rankings compared with) is read first, then
    the store's connections are released while the retrievers answer, and the replay is saved
    last. With ``store_url``, saving is :func:`record_replay` (spooled when the store is
    unreachable, also when it went away after it was read); with ``store`` None as well (it
    could not be opened, or failed while it was read), the sample is drawn from the log and the
    replay compared with ``against`` only, the rest when ``db flush`` saves it.
    """
    if against is not None and against_run is not None:
        raise InvalidInputError("give --against RETRIEVER or --against-run ID, not both")
    if store is None and against_run is not None and store_url is not None:
        raise StoreUnavailableError(
            f"--against-run {against_run} reads a stored replay, and the result store is "
            "unreachable: nothing was replayed"
        )
    drawn: tuple[int | None, QuerySample, SampleSpec] | None = None
    found = None
    try:
        drawn = stored_sample(config, store, sample_name)
        if against is None:  # another retriever's rankings are the ones replayed below
            found = compared_with(store, drawn[0], retriever, against_run=against_run)
    except StoreUnavailableError:
        if store is None or store_url is None or not save or against_run is not None:
            raise
        store = None  # as if it had been down from the start: spooled, compared when saved
    if drawn is None:
        drawn = stored_sample(config, None, sample_name)
    if store is not None:
        store.release()  # no connection is held open while the retrievers answer
    sample_id, sample, spec = drawn
    settings = replay_settings(config, sample_name, retriever, k=k)
    after = rankings_of(config, sample, spec, retriever, settings)
    others = None if against is None else rankings_of(config, sample, spec, against, settings)
    outcome = judged_against(
        config,
        store,
        sample_name,
        retriever,
        sample_id if store is not None else None,
        sample,
        after,
        others=others,
        against=against,
        against_run=against_run,
        index_version=index_version,
        run_key=run_key,
        k=settings.k,
        p=p,
        found=found,
    )
    if save and store_url is not None:
        return record_replay(store, outcome, store_url=store_url, spool_dir=spool_dir)
    if save and store is not None:
        return save_outcome(store, outcome)
    return outcome


def outcome_of(
    sample_name: str,
    retriever: str,
    sample_id: int | None,
    sample: QuerySample,
    after: Sequence[Ranked],
    before: Sequence[Ranked] | None,
    *,
    p: float,
    k: int,
    thresholds: DriftThresholds,
    compared: StoredReplay | None,
    label: str | None,
    index_version: str | None,
    run_key: str | None,
) -> ReplayOutcome:
    """``after`` compared with ``before`` at persistence ``p`` and depth ``k``, judged by
    ``thresholds``: the outcome a replay saves (its run date now, this retrieval-eval's
    version)."""
    from retrieval_eval import installed_version

    return ReplayOutcome(
        run_key=run_key or uuid.uuid4().hex,
        sample_name=sample_name,
        sample_id=sample_id,
        sample=sample,
        retriever=retriever,
        rankings=after,
        comparison=compare(before, after, p=p, k=k, thresholds=thresholds),
        against=label,
        compared=compared,
        index_version=index_version,
        thresholds=thresholds,
        package_version=installed_version(),
    )


def compared_with(
    store: Store | None,
    sample_id: int | None,
    retriever: str,
    *,
    others: Sequence[Ranked] | None = None,
    label: str | None = None,
    against_run: int | None = None,
    before: datetime | None = None,
) -> tuple[Sequence[Ranked] | None, StoredReplay | None, str | None]:
    """(rankings, stored replay, label) a replay is compared with: ``others`` (another
    retriever's rankings, replayed now, named by ``label``), else :func:`compared_rankings`."""
    if others is not None:
        return others, None, label
    rankings, compared = compared_rankings(store, sample_id, retriever, against_run, before)
    return rankings, compared, None if compared is None else f"replay {compared.id}"


def judged_against(
    config: Config,
    store: Store | None,
    sample_name: str,
    retriever: str,
    sample_id: int | None,
    sample: QuerySample,
    after: Sequence[Ranked],
    *,
    others: Sequence[Ranked] | None = None,
    against: str | None = None,
    against_run: int | None = None,
    index_version: str | None = None,
    run_key: str | None = None,
    k: int | None = None,
    p: float | None = None,
    found: tuple[Sequence[Ranked] | None, StoredReplay | None, str | None] | None = None,
) -> ReplayOutcome:
    """``after`` compared with what :func:`compared_with` finds (or ``found``: what it found
    before the retrieval), by the series' persistence, depth and drift limits; the outcome
    keeps what it was compared with, for the spool. The CLI's replay and the DAG's compare task
    both end here."""
    before, compared, label = found or compared_with(
        store,
        sample_id,
        retriever,
        others=others,
        label=None if against is None else f"{AGAINST}{against}",
        against_run=against_run,
    )
    outcome = outcome_of(
        sample_name,
        retriever,
        sample_id,
        sample,
        after,
        before,
        p=persistence(config, sample_name, retriever, p),
        k=k or replay_settings(config, sample_name, retriever).k,
        thresholds=drift_thresholds(config, sample_name, retriever),
        compared=compared,
        label=label,
        index_version=index_version,
        run_key=run_key,
    )
    return replace(outcome, before=others, before_retriever=against, against_run=against_run)


AGAINST = "retriever "  # how a replay names the other retriever it was compared with


def stored_outcome(store: Store, replay_id: int) -> ReplayOutcome:
    """A stored replay compared again with the replay it was compared with when it ran (its
    ``compared_id``: the replay before it, or the ``--against`` retriever's), as the outcome a
    replay draft is made from (``sets pool --replay``); a replay compared with nothing (the
    first of its series) is an error saying so."""
    from retrieval_eval.store.replays import get_replay, get_sample, rankings

    stored = get_replay(store, replay_id)
    if stored.compared_id is None:
        raise InvalidInputError(
            f"replay {replay_id} ({stored.sample_name} by {stored.retriever}) was compared with no "
            "stored replay (the first of its series, or compared with another retriever before "
            "retrieval-eval kept that retriever's rankings): no rankings moved to pool; give a "
            f"later replay of the series (`retrieval-eval drift {stored.sample_name} "
            f"{stored.retriever}` lists them), or replay with --against RETRIEVER again"
        )
    outcome = outcome_of(
        stored.sample_name,
        stored.retriever,
        stored.sample_id,
        get_sample(store, stored.sample_id),
        rankings(store, replay_id),
        rankings(store, stored.compared_id),
        p=stored.p,
        k=stored.k,
        thresholds=DriftThresholds(),
        compared=get_replay(store, stored.compared_id),
        label=None,
        index_version=stored.index_version,
        run_key=stored.run_key,
    )
    return replace(outcome, replay_id=replay_id)


def unpacked(sample: QuerySample, rows: Iterable[Sequence[Any]]) -> list[Ranked]:
    """Rankings packed as ``(key, ids, error)`` (an XCom, a spool file) with the sample's
    stored texts, counts and buckets."""
    by_key = {q.key: q for q in sample.queries}
    return [
        Ranked(key, by_key[key].text, by_key[key].count, by_key[key].bucket, tuple(ids), error)
        for key, ids, error in rows
    ]


def save_outcome(store: Store, outcome: ReplayOutcome) -> ReplayOutcome:
    """Store a replay (one transaction; its sample first when it is not stored yet) and give
    the outcome its id."""
    from retrieval_eval.store.replays import ReplayRecord, save_replay, save_sample

    sample_id = outcome.sample_id
    if sample_id is None:  # drawn while the store was unreachable
        sample_id = save_sample(store, outcome.sample)
    if outcome.before is not None and outcome.before_retriever and outcome.compared is None:
        outcome = replace(outcome, compared=_save_before(store, outcome, sample_id))
    replay_id = save_replay(
        store,
        carried(
            ReplayRecord,
            outcome,
            sample_id=sample_id,
            k=outcome.comparison.k,
            p=outcome.comparison.p,
            compared_id=outcome.compared.id if outcome.compared else None,
        ),
    )
    return replace(outcome, sample_id=sample_id, replay_id=replay_id)


def _save_before(store: Store, outcome: ReplayOutcome, sample_id: int) -> StoredReplay:
    """The ``--against`` retriever's rankings saved as its own replay of the sample (compared
    with the one of its series before it, by this replay's p, k and limits; its run key made
    from this replay's, so saving again is idempotent), read back."""
    from retrieval_eval.store.replays import get_replay

    assert outcome.before is not None and outcome.before_retriever is not None
    name = outcome.before_retriever
    previous, compared, label = compared_with(store, sample_id, name, before=outcome.run_date)
    other = outcome_of(
        outcome.sample_name,
        name,
        sample_id,
        outcome.sample,
        outcome.before,
        previous,
        p=outcome.comparison.p,
        k=outcome.comparison.k,
        thresholds=outcome.thresholds,
        compared=compared,
        label=label,
        index_version=outcome.index_version,
        # a name of its own (a DAG run's key names the DAG run the dashboard links to)
        run_key=uuid.uuid5(uuid.NAMESPACE_OID, f"before {outcome.run_key}").hex,
    )
    other = replace(other, run_date=outcome.run_date, package_version=outcome.package_version)
    saved = save_outcome(store, other).replay_id
    assert saved is not None
    return get_replay(store, saved)


def record_replay(
    store: Store | None,
    outcome: ReplayOutcome,
    *,
    store_url: str,
    spool_dir: Path | None = None,
) -> ReplayOutcome:
    """Save the replay in one transaction into ``store`` (opened from ``store_url`` when None);
    when the store cannot be reached, keep it as a run is kept
    (:func:`~retrieval_eval.store.spool.keep_spooled`: the spool, else a new folder of the
    temporary folder) and say so in the outcome's ``notes``, ``problem`` and ``spool_path``
    (``db flush`` compares and saves it later). Never raises StoreUnavailableError."""
    from retrieval_eval.store import mask_url, open_store
    from retrieval_eval.store.spool import keep_spooled
    from retrieval_eval.workflows.recording import not_saved

    try:
        if store is not None:
            return save_outcome(store, outcome)
        with open_store(store_url) as opened:
            return save_outcome(opened, outcome)
    except StoreUnavailableError as exc:
        kept = keep_spooled(spooled(outcome, store_url), spool_dir)
        saves = (
            f"compares it with {_compared_later(outcome)} and stores it in {mask_url(store_url)}"
        )
        problem = not_saved(exc, kept, "replay", saves)
        return replace(
            outcome,
            spool_path=kept.path,
            notes=(*outcome.notes, f"Result store unreachable: {problem}."),
            problem=problem,
            problem_exit_code=exc.exit_code,
        )


def _compared_later(outcome: ReplayOutcome) -> str:
    if outcome.before is not None:
        return outcome.against or "the other retriever"
    if outcome.against_run is not None:
        return f"replay {outcome.against_run}"
    return "the replay of its series before it"


def _packed(rankings: Sequence[Ranked]) -> list[SpooledRanking]:
    return [(r.key, list(r.ids), r.error) for r in rankings]


def spooled(outcome: ReplayOutcome, store_url: str) -> SpooledReplay:
    """The spool entry of a replay: its sample as stored, its rankings and what it is compared
    with, for the store at ``store_url`` (kept masked, with a fingerprint of the full URL)."""
    from retrieval_eval.store import mask_url
    from retrieval_eval.store.spool import SpooledReplay
    from retrieval_eval.store.url import parse_store_url, store_fingerprint

    sample = outcome.sample
    mode: Literal["previous", "replay", "retriever"] = "previous"
    if outcome.before is not None:
        mode = "retriever"
    elif outcome.against_run is not None:
        mode = "replay"
    return carried(  # run_key, retriever, thresholds, index and package version as they are
        SpooledReplay,
        outcome,
        started_at=outcome.run_date,
        sample_name=sample.name,
        privacy=sample.privacy,
        log_queries=sample.log_queries,
        log_traffic=sample.log_traffic,
        queries=[(q.key, q.text, q.count, q.bucket, q.query_id) for q in sample.queries],
        k=outcome.comparison.k,
        p=outcome.comparison.p,
        rankings=_packed(outcome.rankings),
        compare_with=mode,
        compared_id=outcome.against_run,
        against=outcome.against if outcome.before is not None else None,
        before=_packed(outcome.before) if outcome.before is not None else None,
        store=mask_url(parse_store_url(store_url)),
        store_fingerprint=store_fingerprint(store_url),
    )


def save_spooled(store: Store, entry: SpooledReplay) -> int:
    """Compare a spooled replay as it would have been compared when it ran, and save it (its
    sample first, once); return its id. UnknownNameError when the replay it was compared with
    by request is gone (pruned)."""
    from retrieval_eval.store.replays import save_sample

    queries = tuple(SampledQuery(*query) for query in entry.queries)
    sample = QuerySample(
        entry.sample_name, entry.privacy, queries, entry.log_queries, entry.log_traffic
    )
    sample_id = save_sample(store, sample)
    after = unpacked(sample, entry.rankings)
    others = unpacked(sample, entry.before or []) if entry.compare_with == "retriever" else None
    before, compared, label = compared_with(
        store,
        sample_id,
        entry.retriever,
        others=others,
        label=entry.against,
        against_run=entry.compared_id if entry.compare_with == "replay" else None,
        before=entry.started_at,
    )
    outcome = outcome_of(
        entry.sample_name,
        entry.retriever,
        sample_id,
        sample,
        after,
        before,
        p=entry.p,
        k=entry.k,
        thresholds=entry.thresholds,
        compared=compared,
        label=label,
        index_version=entry.index_version,
        run_key=entry.run_key,
    )
    outcome = replace(
        outcome,
        run_date=entry.started_at,
        package_version=entry.package_version,
        before=others,
        before_retriever=(entry.against or "").removeprefix(AGAINST) or None,
    )
    replay_id = save_outcome(store, outcome).replay_id
    assert replay_id is not None
    return replay_id
