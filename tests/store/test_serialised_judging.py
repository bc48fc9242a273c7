"""Runs of one (set, retriever) recorded at the same moment by separate processes form a chain.

Choosing the baseline and saving are one transaction, serialised per (set, retriever, grader):
exactly one run is the ``baseline`` and each later one (in commit, i.e. id, order) is judged
against the newest earlier run that is valid and not a regression. Ten processes (forked from a
fresh forkserver that preloaded the recorder: no state inherited from pytest) wait at a
barrier, then all call ``record_run`` on both backends.
"""

from __future__ import annotations

import multiprocessing
from typing import Any

from retrieval_eval.config.models import Thresholds
from retrieval_eval.store import Store
from retrieval_eval.workflows.recording import record_run
from store.builders import hits, make_run

RACERS = 10
REGRESSED = {3, 6}  # 5 of 10 hits where the others have 8: a regression against a good run
INVALID = {8}  # every question errors: an invalid run, never a baseline


def _record_one(store_url: str, index: int, barrier: Any) -> None:
    if index in INVALID:
        questions = hits(0, 10, error="connection refused")
    else:
        questions = hits(5 if index in REGRESSED else 8, 10)
    # one start and end for all: only the commit order tells the runs apart
    result = make_run(questions, run_key=f"racer-{index}")
    barrier.wait(timeout=120)
    record_run(result, store_url=store_url, thresholds=Thresholds())


def test_concurrent_first_runs_form_one_chain(store: Store, store_url: str) -> None:
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__, "retrieval_eval.workflows.recording"])
    barrier = context.Barrier(RACERS)
    racers = [
        context.Process(target=_record_one, args=(store_url, index, barrier))
        for index in range(RACERS)
    ]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join(timeout=300)
    assert [racer.exitcode for racer in racers] == [0] * RACERS

    runs = sorted(store.history("demo.set", "bm25", limit=50, questions=False), key=lambda r: r.id)
    assert len(runs) == RACERS
    assert [run.verdict_state for run in runs].count("baseline") == 1
    # the invalid racer may commit first: it is never a baseline, so the first VALID run is
    first_valid = next(run for run in runs if run.status == "valid")
    assert first_valid.verdict_state == "baseline" and first_valid.baseline_run_id is None
    for position, run in enumerate(runs):
        if run is first_valid:
            continue
        earlier_good = [
            r.id for r in runs[:position] if r.status == "valid" and not r.is_regression
        ]
        # an invalid run is never compared, so it names no baseline
        expected = None if run.status == "invalid" else earlier_good[-1]
        assert run.baseline_run_id == expected, (run.result.run_key, run.verdict_state)
    invalid = next(run for run in runs if run.result.run_key == "racer-8")
    assert invalid.verdict_state == "invalid_run"
