"""The dashboard's compare page as data: the leaderboard of N retrievers on one set.

``/compare?set=S&r=R1&r=R2&r=R3`` (``a=`` and ``b=`` still name the first two, as before)
shows what ``retrieval-eval compare`` prints: :func:`retrieval_eval.workflows.leaderboard.compare_runs`
over each retriever's latest stored run, plus every retriever stored for the set for the chooser.

Which retrievers: the named ones, in order, without repeats. With fewer than two named, the
set's other stored retrievers (in name order) are added: none named shows the whole set, one
named shows it next to every other. A set without stored runs, a retriever without runs on it
and an unknown reference are 404 (UnknownNameError); a set with a single stored retriever is
a 400 (InvalidInputError: a comparison needs two). α outside (0, 1) is refused by the route.
An invalid run (too many retriever errors) is ranked like any other, as the CLI does, but its
row says so (an "invalid run" badge and a red row marker) and its JSON entry has ``valid: false``.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel

from retrieval_eval.errors import UnknownNameError
from retrieval_eval.store import Store
from retrieval_eval.workflows.leaderboard import ALPHA, Leaderboard, compare_runs, latest_runs


class Comparison(BaseModel):
    set: str
    retrievers: list[str]  # every retriever stored for the set, for the chooser
    leaderboard: Leaderboard


def chosen(named: Sequence[str], stored: Sequence[str]) -> list[str]:
    """The retrievers to compare: ``named`` without repeats, filled up from ``stored`` when
    fewer than two are named."""
    picked = list(dict.fromkeys(named))
    if len(picked) < 2:
        picked += [name for name in stored if name not in picked]
    return picked


def compare(
    store: Store | None,
    set_identifier: str,
    named: Sequence[str] = (),
    reference: str | None = None,
    alpha: float = ALPHA,
) -> Comparison:
    stored = store.runs.retrievers_for(set_identifier) if store else []
    if not stored:
        raise UnknownNameError(f"no stored runs for set {set_identifier!r}")
    assert store is not None  # retrievers were found in it

    runs = latest_runs(store, set_identifier, chosen(named, stored))
    judged = store.judgments.read(set_identifier)
    every = store.judgments.read(set_identifier, gated=False)  # for the judge figures
    board = compare_runs(
        runs, reference=reference, alpha=alpha, judgments=judged, model_judgments=every
    )
    return Comparison(set=set_identifier, retrievers=stored, leaderboard=board)
