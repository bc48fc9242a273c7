"""One replay, start to end: the sample (built and stored once), the retriever's rankings, the
rankings compared with, the comparison and its verdict, saved in one transaction. The CLI's
``replay`` and the DAG's replay tasks both call these steps.

Compared with, in order: ``against`` (another retriever, replayed now), ``against_run`` (a stored
replay of the same sample), else the previous valid replay of this sample and retriever (so a
nightly replay shows what last night's rebuild moved). Replays of different samples are never
compared: ``against_run`` of another sample is an error.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from retrieval_eval.errors import InvalidInputError
from retrieval_eval.replay.compare import Comparison, DriftThresholds, Ranked, compare
from retrieval_eval.replay.run import ReplaySettings, replay_sample
from retrieval_eval.replay.samples import QuerySample, SampleSpec, build_sample, resolve_texts

if TYPE_CHECKING:
    from retrieval_eval.config.models import Config
    from retrieval_eval.store import Store
    from retrieval_eval.store.replays import StoredReplay


@dataclass(frozen=True)
class ReplayOutcome:
    """What a replay produced, saved or not."""

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
    from retrieval_eval.judging.pipeline import opened_retriever

    texts = resolve_texts(sample, spec, config.base_dir)
    with opened_retriever(config, retriever) as built:
        return replay_sample(sample, texts, built, settings)


def compared_rankings(
    store: Store | None,
    sample_id: int | None,
    retriever: str,
    against_run: int | None,
) -> tuple[list[Ranked] | None, StoredReplay | None]:
    """The stored rankings a replay is compared with: ``against_run``'s, else the previous
    valid replay's of (sample, retriever); none for the first of a series."""
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
    previous = previous_replay(store, sample_id, retriever)
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
) -> ReplayOutcome:
    """Replay ``sample_name`` with ``retriever``, compare, judge and (with ``save``) store it."""
    if against is not None and against_run is not None:
        raise InvalidInputError("give --against RETRIEVER or --against-run ID, not both")
    sample_id, sample, spec = stored_sample(config, store, sample_name)
    settings = replay_settings(config, sample_name, retriever, k=k)
    after = rankings_of(config, sample, spec, retriever, settings)
    compared: StoredReplay | None = None
    if against is not None:
        before: list[Ranked] | None = rankings_of(config, sample, spec, against, settings)
        label: str | None = f"retriever {against}"
    else:
        before, compared = compared_rankings(store, sample_id, retriever, against_run)
        label = None if compared is None else f"replay {compared.id}"
    outcome = judged(
        config,
        sample_name,
        retriever,
        sample_id,
        sample,
        after,
        before,
        compared=compared,
        label=label,
        index_version=index_version,
        run_key=run_key,
        k=settings.k,
        p=p,
    )
    if save and store is not None and sample_id is not None:
        return save_outcome(store, outcome)
    return outcome


def judged(
    config: Config,
    sample_name: str,
    retriever: str,
    sample_id: int | None,
    sample: QuerySample,
    after: Sequence[Ranked],
    before: Sequence[Ranked] | None,
    *,
    compared: StoredReplay | None = None,
    label: str | None = None,
    index_version: str | None = None,
    run_key: str | None = None,
    k: int | None = None,
    p: float | None = None,
) -> ReplayOutcome:
    """Compare ``after`` with ``before`` by the series' persistence, depth and drift limits."""
    comparison = compare(
        before,
        after,
        p=persistence(config, sample_name, retriever, p),
        k=k or replay_settings(config, sample_name, retriever).k,
        thresholds=drift_thresholds(config, sample_name, retriever),
    )
    return ReplayOutcome(
        run_key=run_key or uuid.uuid4().hex,
        sample_name=sample_name,
        sample_id=sample_id,
        sample=sample,
        retriever=retriever,
        rankings=after,
        comparison=comparison,
        against=label,
        compared=compared,
        index_version=index_version,
    )


def save_outcome(store: Store, outcome: ReplayOutcome) -> ReplayOutcome:
    """Store a replay (one transaction) and give the outcome its id."""
    from dataclasses import replace

    from retrieval_eval import installed_version
    from retrieval_eval.store.replays import ReplayRecord, save_replay

    assert outcome.sample_id is not None
    replay_id = save_replay(
        store,
        ReplayRecord(
            run_key=outcome.run_key,
            sample_id=outcome.sample_id,
            sample_name=outcome.sample_name,
            retriever=outcome.retriever,
            k=outcome.comparison.k,
            p=outcome.comparison.p,
            run_date=datetime.now(UTC),
            rankings=outcome.rankings,
            comparison=outcome.comparison,
            compared_id=outcome.compared.id if outcome.compared else None,
            against=outcome.against,
            index_version=outcome.index_version,
            package_version=installed_version(),
        ),
    )
    return replace(outcome, replay_id=replay_id)
