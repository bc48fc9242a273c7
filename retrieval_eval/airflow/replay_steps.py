"""The work of a replay DAG's tasks, as plain functions over JSON-able values.

plan (the sample drawn and stored once, the retriever's cache filled, the sample split into
index ranges) → replay one range per mapped task (rankings travel as keys and ids only: no query
text crosses XCom) → compare and save (with the index version read from the triggering asset
events) → the branch. Each calls :mod:`retrieval_eval.workflows.replay`, as the CLI does.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from retrieval_eval.config.models import load_config
from retrieval_eval.errors import InvalidInputError
from retrieval_eval.workflows.labelled_run import batch_count

if TYPE_CHECKING:
    from retrieval_eval.store import Store

BRANCH_DRIFT = "alert_drift"
BRANCH_INVALID = "alert_invalid_replay"
BRANCH_OK = "no_drift"


def plan_replay(
    config_path: str | None,
    sample_name: str,
    retriever: str,
    max_batches: int,
    *,
    store_url: str,
    against: str | None = None,
    min_batch_questions: int = 1,
) -> list[dict[str, Any]]:
    """Draw and store the sample (once), fill the retrievers' caches, split into batches
    (:func:`retrieval_eval.workflows.labelled_run.batch_count`: one per ``min_batch_questions``)."""
    from retrieval_eval.store import open_store
    from retrieval_eval.workflows.replay import stored_sample

    config = load_config(config_path)
    with open_store(store_url) as store:
        sample_id, sample, _spec = stored_sample(config, store, sample_name)
    for name in filter(None, (retriever, against)):
        config.retriever_registry.prepare(name)
    count = len(sample.queries)
    batches = batch_count(max(count, 1), max_batches, min_batch_questions)
    size = max(1, math.ceil(count / batches))
    return [
        {
            "sample_id": sample_id,
            "fingerprint": sample.fingerprint,
            "start": i,
            "stop": min(i + size, count),
        }
        for i in range(0, max(count, 1), size)
    ]


def replay_batch(
    config_path: str | None,
    sample_name: str,
    retriever: str,
    batch: Mapping[str, Any],
    *,
    store_url: str,
    against: str | None = None,
) -> dict[str, Any]:
    """Replay queries ``[start, stop)`` of the stored sample (and with ``against``, the other
    retriever too): ``{"after": [[key, ids, error], ...], "before": [...] | None}``."""
    from dataclasses import replace

    from retrieval_eval.store import open_store
    from retrieval_eval.store.replays import get_sample
    from retrieval_eval.workflows.replay import rankings_of, replay_settings

    config = load_config(config_path)
    spec = config.sample_spec(sample_name)
    with open_store(store_url) as store:
        sample = get_sample(store, batch["sample_id"])
    if sample.fingerprint != batch["fingerprint"]:
        raise InvalidInputError(
            f"query sample {sample_name!r} changed while the replay was in progress; trigger "
            "the DAG again"
        )
    part = replace(sample, queries=sample.queries[batch["start"] : batch["stop"]])
    settings = replay_settings(config, sample_name, retriever)

    def packed(name: str) -> list[list[Any]]:
        return [
            [r.key, list(r.ids), r.error] for r in rankings_of(config, part, spec, name, settings)
        ]

    return {"after": packed(retriever), "before": packed(against) if against else None}


def compare_and_save(
    config_path: str | None,
    sample_name: str,
    retriever: str,
    batches: list[dict[str, Any]],
    *,
    sample_id: int,
    store_url: str,
    run_key: str,
    fingerprint: str | None = None,
    against: str | None = None,
    index_version: str | None = None,
) -> dict[str, Any]:
    """Gather the batches, compare with the replay compared with, judge and save (idempotent
    on the run key); returns what the branch and the alerts need.

    A store that cannot be reached, when the task starts or at the save, spools the replay as
    the CLI's ``replay`` does (the sample drawn from its log again, and checked against the
    planned ``fingerprint``; compared with ``against`` now, with the replay before it when
    ``db replay`` saves it) and raises StoreUnavailableError naming the spool file, so the task
    retries with backoff (as ``persist`` does for a run)."""
    from retrieval_eval.errors import StoreUnavailableError
    from retrieval_eval.store import open_store
    from retrieval_eval.store.replays import get_sample
    from retrieval_eval.workflows.replay import (
        judged_against,
        record_replay,
        stored_sample,
        unpacked,
    )

    config = load_config(config_path)
    with contextlib.ExitStack() as stack:
        try:
            opened = stack.enter_context(open_store(store_url))
            sample = get_sample(opened, sample_id)
            store: Store | None = opened
        except StoreUnavailableError as exc:
            store, (_, sample, _spec) = None, stored_sample(config, None, sample_name)
            if fingerprint is not None and sample.fingerprint != fingerprint:
                raise StoreUnavailableError(
                    f"{exc}; the replay was not spooled: query sample {sample_name!r} drawn from "
                    "its log again is not the one replayed (the log changed); the rankings stay "
                    "in this DAG run, and the task retries"
                ) from exc

        def side(name: str) -> list[Any]:
            return [row for b in batches for row in (b[name] or [])]

        after = unpacked(sample, side("after"))
        if len(after) != len(sample.queries):
            raise InvalidInputError(
                f"expected {len(sample.queries)} rankings, got {len(after)}; trigger the DAG again"
            )
        outcome = judged_against(
            config,
            store,
            sample_name,
            retriever,
            sample_id if store is not None else None,
            sample,
            after,
            others=unpacked(sample, side("before")) if against else None,
            against=against,
            index_version=index_version,
            run_key=run_key,
        )
        outcome = record_replay(store, outcome, store_url=store_url)
    if outcome.problem is not None:
        print(outcome.notes[-1])  # where it went, and the command that saves it, as the CLI says
        if outcome.spool_path is None:  # the spool and the temporary folder both failed
            raise StoreUnavailableError(
                "result store unreachable, and the replay could not be spooled: its rankings "
                "stay in this DAG run, and the task retries"
            )
        raise StoreUnavailableError(
            f"result store unreachable; replay spooled to {outcome.spool_path} "
            "(`retrieval-eval db replay` saves it later)"
        )
    from retrieval_eval.reports.replay import headline

    comparison = outcome.comparison
    return {
        "replay_id": outcome.replay_id,
        "run_key": run_key,
        "state": comparison.state,
        "reasons": list(comparison.reasons),
        "headline": headline(outcome),
        "sample": sample_name,
        "retriever": retriever,
        "index_version": index_version,
        "compared_index_version": outcome.compared.index_version if outcome.compared else None,
        "mean_rbo": comparison.overall.mean_rbo,
        "top1_changed": comparison.overall.top1_changed_share,
        "errors": comparison.errors,
        "error_reasons": comparison.error_reasons(),
        "queries": len(after),
    }


def choose_branch(saved: Mapping[str, Any]) -> str:
    state = saved["state"]
    if state in ("invalid", "empty"):  # nothing compared is never "no drift"
        return BRANCH_INVALID
    if state == "drift":
        return BRANCH_DRIFT
    return BRANCH_OK
