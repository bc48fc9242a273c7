"""Accepting a run as its key's baseline: what ``retrieval-eval runs accept`` does and what
an approval in Airflow (``approve_baseline``) does, one code path for both.

A run compares with the newest valid run of its key (set, retriever, labels fingerprint) that is
not a regression nor refused as a baseline, or was accepted (:meth:`Store.find_baseline`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from retrieval_eval.store import Store, StoredRun


def accept_baseline(store: Store, run_id: int) -> str:
    """Accept ``run_id`` as the baseline of its key and say what that changes for the next run.

    Accepting an older run while a newer good one exists changes nothing for the next run: the
    message says so, with the ``--baseline`` that compares with it anyway. An invalid run is
    refused (InvalidInputError), an unknown id is UnknownNameError.
    """
    store.runs.accept_baseline(run_id)
    result = store.runs.get(run_id, questions=False).result
    effective = store.runs.find_baseline(
        result.set_identifier, result.retriever, result.labels_fingerprint
    )
    pair = f"{result.set_identifier} × {result.retriever}"
    if effective is None or effective.id == run_id:
        return (
            f"run {run_id} accepted as baseline for {pair}; later runs with the same labels "
            "compare against it until a newer run without a regression follows"
        )
    return (
        f"run {run_id} accepted for {pair}, but the next run will be compared with run "
        f"{effective.id}: a run compares with the newest valid run that is not a regression "
        f"(or was accepted), and run {effective.id} is newer. To compare with run {run_id}, "
        f"pin it: `retrieval-eval run {result.set_identifier} {result.retriever} "
        f"--baseline {run_id}`."
    )


def latest_baseline(store: Store, set_identifier: str, retriever: str) -> StoredRun | None:
    """The newest baseline of (set, retriever) under any labels: what a run under changed labels
    would take over from."""
    found = [
        run
        for fingerprint in store.runs.fingerprints(set_identifier, retriever)
        if (run := store.runs.find_baseline(set_identifier, retriever, fingerprint)) is not None
    ]
    return max(found, key=lambda run: (run.run_date, run.id), default=None)
