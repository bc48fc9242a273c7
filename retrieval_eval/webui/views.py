"""What each dashboard page shows, as plain data: the HTML pages and the JSON API render the same.

Four views: the overview of every (set, retriever) pair, the history of one pair, one run, and
N retrievers on one set (:mod:`compare_view`). Each function reads the store and returns a pydantic model;
``model_dump(mode="json")`` of it is the JSON API's answer.

Edge cases:

- An empty store, or a SQLite file that does not exist yet, shows no pairs (nothing is created:
  the dashboard never writes).
- A pair, run or retriever that is not stored raises UnknownNameError (the app answers 404).
- Flipped questions are the ones the run's verdict recorded against its baseline when it was
  saved; a run saved without a comparison (first run, not comparable, invalid) has none.
- The compare view is :mod:`compare_view` (the leaderboard of N retrievers), re-exported here.
- A run whose dead-label check found dead ids carries its one-line summary in ``labels_summary``
  ("labels need attention: N ids no longer in the index ..."), and its stale questions are
  marked in the listing (:mod:`listing`); a run unchecked, or checked clean, has neither. Every
  dead id is flagged "no longer in the index", a partly dead question's and a flip's included.
- A verdict that left stale questions out has deltas over fewer questions than the rates beside
  them: the summary then carries ``compared_questions`` and the compared rates
  (:class:`~retrieval_eval.store.summary.RunSummary`), and the pages say "on the N questions
  compared (before → after)" next to each Δ.
  Its slice rates are shown as the verdict judged them, without those questions, this run's and
  the baseline's (``judged_slices``, :mod:`slices_view`).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from retrieval_eval.errors import UnknownNameError
from retrieval_eval.reports.verdict import verdict_document
from retrieval_eval.store import Store, StoredRun
from retrieval_eval.store.summary import RunSummary
from retrieval_eval.webui.compare_view import Comparison, compare
from retrieval_eval.webui.listing import ListedQuestion, Listing, ListQuery, list_questions
from retrieval_eval.webui.power_view import power_of
from retrieval_eval.webui.replay_view import Drift, ReplayPage
from retrieval_eval.webui.review_view import ReviewQueue
from retrieval_eval.webui.slices_view import JudgedSlices, judged_slices


class PairOverview(BaseModel):
    set: str
    retriever: str
    latest: RunSummary
    recent: list[RunSummary]  # oldest first, the latest last


class ReplaySeries(BaseModel):
    """A (sample, retriever) replay series on the overview: its newest replay."""

    sample: str
    retriever: str
    replays: int
    latest_id: int
    state: str
    mean_rbo: float | None
    top1_changed: float | None
    index_version: str | None
    against: str | None = None  # what the newest replay was compared with: its "before"


class Overview(BaseModel):
    pairs: list[PairOverview]
    replays: list[ReplaySeries] = []


class History(BaseModel):
    set: str
    retriever: str
    runs: list[RunSummary]  # oldest first
    regressions: list[int]  # run ids whose verdict was a regression
    depths: list[int] = Field(default_factory=lambda: [1, 3])  # every depth a listed run gates
    # the runs (ids) first judged against other labels than the run before them
    label_changes: list[int] = Field(default_factory=list)


class Flip(BaseModel):
    id: str
    question: str
    form: str
    hard_class: str | None
    first_hit_rank: int | None
    baseline_first_hit_rank: int | None = None
    expected_document_ids: list[str] = Field(default_factory=list)
    grades: dict[str, int] | None = None  # a graded question's judged grades
    retrieved: list[str] = Field(default_factory=list)
    dead_ids: list[str] = Field(default_factory=list)  # expected ids gone from the index


class Flips(BaseModel):
    """The questions that changed outcome against the baseline: at top-1 and top-3 (the
    seed's), and at each other gated depth (``to_miss_at``, ``to_hit_at``)."""

    top1_to_miss: list[Flip] = Field(default_factory=list)
    top1_to_hit: list[Flip] = Field(default_factory=list)
    top3_to_miss: list[Flip] = Field(default_factory=list)
    top3_to_hit: list[Flip] = Field(default_factory=list)
    to_miss_at: dict[int, list[Flip]] = Field(default_factory=dict)
    to_hit_at: dict[int, list[Flip]] = Field(default_factory=dict)
    depths: list[int] = Field(default_factory=lambda: [1, 3])  # the run's gated depths

    def at(self, depth: int) -> tuple[list[Flip], list[Flip]]:
        """Hit → miss and miss → hit at a gated ``depth``."""
        if depth in (1, 3):
            return getattr(self, f"top{depth}_to_miss"), getattr(self, f"top{depth}_to_hit")
        return self.to_miss_at.get(depth, []), self.to_hit_at.get(depth, [])

    def kinds(self) -> dict[str, str]:
        """Each way a question flips at the gated depths, key -> label, in the order the run
        page says them: hit → miss at each depth, then miss → hit (``top5_to_miss``: "top-5
        hit → miss")."""
        to_miss = {f"top{d}_to_miss": f"top-{d} hit → miss" for d in self.depths}
        return to_miss | {f"top{d}_to_hit": f"top-{d} miss → hit" for d in self.depths}

    def kind(self, key: str) -> list[Flip]:
        """The flips of one of :meth:`kinds`' keys."""
        depth, direction = key.removeprefix("top").split("_", 1)
        to_miss, to_hit = self.at(int(depth))
        return to_miss if direction == "to_miss" else to_hit

    @property
    def count(self) -> int:
        return sum(len(self.kind(key)) for key in self.kinds())

    def ids(self, kind: str) -> list[str]:
        """Every question that flipped to a miss (``kind`` "to_miss") or to a hit, at any
        gated depth, once each."""
        position = 0 if kind == "to_miss" else 1
        found = [f.id for depth in self.depths for f in self.at(depth)[position]]
        return list(dict.fromkeys(found))


class RunView(BaseModel):
    run: RunSummary
    run_key: str
    set_name: str
    settings: dict[str, Any]
    verdict: dict[str, Any] | None
    baseline: RunSummary | None
    flips: Flips
    questions: list[ListedQuestion]  # the listing's page (see :mod:`listing`)
    listing: Listing
    # the smallest drop this run's set size detects, by the thresholds (webui/power_view.py)
    power: dict[str, Any] | None = None
    power_summary: str | None = None
    # the dead-label check's line when it found dead ids (retrieval_eval.evaluation.labels), else None
    labels_summary: str | None = None
    # slice rates without the stale questions the verdict left out (webui/slices_view.py)
    judged_slices: JudgedSlices | None = None
    # with model judgments of the set: holes by who judged and the hit rate three ways
    # (retrieval_eval.labels.machine.JudgeFigures.contract), against the judgments stored now
    judge_figures: dict[str, Any] | None = None


def worded(summary: RunSummary) -> RunSummary:
    """``summary`` with its verdict's sentence (:func:`retrieval_eval.reports.verdict.
    verdict_summary`): the store keeps a verdict as data, worded when read."""
    from retrieval_eval.reports.verdict import verdict_summary

    if summary.verdict is None:  # no verdict, or one only its words were kept of
        return summary
    return summary.model_copy(update={"verdict_summary": verdict_summary(summary.verdict)})


def gated_depths(runs: list[RunSummary]) -> list[int]:
    """Every depth one of ``runs`` gates, in order: the columns a page lists them in (a run
    that does not gate one of them shows it missing)."""
    return sorted({d for run in runs for d in run.depths}) or [1, 3]


def overview(store: Store | None, runs: int) -> Overview:
    """Every (set, retriever) pair by set then retriever, each with its ``runs`` newest runs."""
    pairs: dict[tuple[str, str], list[RunSummary]] = {}
    for summary in map(worded, store.runs.summaries(limit=runs) if store else []):
        pairs.setdefault((summary.set, summary.retriever), []).insert(0, summary)  # oldest first
    listed = [
        PairOverview(set=s, retriever=r, latest=found[-1], recent=found)
        for (s, r), found in pairs.items()
    ]  # each latest run carries its gated depths, hits and deltas at each (``depths``, ...)
    return Overview(pairs=listed, replays=_replay_series(store) if store else [])


def _replay_series(store: Store) -> list[ReplaySeries]:
    series = []
    for sample, retriever, count in store.replays.pairs():
        latest = store.replays.history(sample, retriever, 1)[0]
        series.append(
            ReplaySeries(
                sample=sample,
                retriever=retriever,
                replays=count,
                latest_id=latest.id,
                state=latest.state,
                mean_rbo=latest.mean_rbo,
                top1_changed=latest.top1_changed,
                index_version=latest.index_version,
                against=latest.against,
            )
        )
    return series


def history(store: Store | None, set_identifier: str, retriever: str, runs: int) -> History:
    from retrieval_eval.store.summary import label_changes, like_with_like

    # as judged against the newest labels where a re-judged run has them (sets rejudge)
    newest = (
        [
            worded(s)
            for s in like_with_like(
                store.runs.summaries(set_identifier, retriever, runs, slices=True)
            )
        ]
        if store
        else []
    )
    found = newest[::-1]  # oldest first, the order charts draw
    if not found:
        raise UnknownNameError(f"no stored runs for set {set_identifier!r} × {retriever!r}")
    return History(
        set=set_identifier,
        retriever=retriever,
        runs=found,
        regressions=[run.run_id for run in found if run.is_regression],
        depths=gated_depths(found),
        label_changes=[found[i].run_id for i in label_changes(found)],
    )


def _get(store: Store | None, run_id: int) -> tuple[Store, StoredRun]:
    if store is None:
        raise UnknownNameError(f"no stored run with id {run_id}")
    return store, store.runs.get(run_id, questions=False)


def run_view(store: Store | None, run_id: int, query: ListQuery | None = None) -> RunView:
    """One run, its baseline and flips, and the page of its questions ``query`` asks for.

    Neither run's questions are read whole: the flips' questions by id, the page's in SQL
    (:mod:`listing`), so a page costs about the same whatever the run's size.
    """
    store, stored = _get(store, run_id)
    baseline: StoredRun | None = None
    if stored.baseline_run_id is not None:
        try:
            baseline = store.runs.get(stored.baseline_run_id, questions=False)
        except UnknownNameError:  # pruned since; the recorded verdict still names the flips
            baseline = None
    flips = _flips(store, stored, baseline, set(_dead_ids(stored)))
    power, power_line = power_of(stored)
    questions, listing = list_questions(
        store,
        stored,
        query or ListQuery(),
        flips.ids("to_miss"),
        flips.ids("to_hit"),
        _dead_ids(stored),
    )
    labels = stored.result.dead_labels
    return RunView(
        run=worded(RunSummary.of(stored)),
        run_key=stored.result.run_key,
        set_name=stored.result.set_name,
        settings=stored.result.settings.model_dump(mode="json"),
        verdict=verdict_document(stored.verdict) if stored.verdict else None,
        baseline=worded(RunSummary.of(baseline)) if baseline else None,
        flips=flips,
        questions=questions,
        listing=listing,
        power=power,
        power_summary=power_line,
        labels_summary=labels.summary() if labels is not None and labels.found else None,
        judged_slices=judged_slices(store, stored, baseline),
        judge_figures=_judge_figures(store, stored),
    )


def _judge_figures(store: Store, stored: StoredRun) -> dict[str, Any] | None:
    """The run's figures beside model judgments, or None without any: only then is the run
    read whole (every question's ranking), so a page without model judgments costs as before."""
    from retrieval_eval.labels.machine import is_machine, judge_figures

    rows = store.judgments.read(stored.result.set_identifier, gated=False)
    if not any(is_machine(r.rater) for r in rows):
        return None
    figures = judge_figures(store.runs.get(stored.id).result, rows)
    return None if figures is None else figures.contract()


def _dead_ids(stored: StoredRun) -> list[str]:
    """The run's dead ids: its own check's, else its verdict's (the same list when both)."""
    labels = stored.result.dead_labels
    if labels is not None and labels.dead_ids:
        return list(labels.dead_ids)
    return list(stored.verdict.dead_ids) if stored.verdict else []


def _unique(ids: list[str]) -> list[str]:
    return list(dict.fromkeys(ids))


def _flips(store: Store, stored: StoredRun, baseline: StoredRun | None, dead: set[str]) -> Flips:
    """The verdict's flips with their questions in this run and their rank at the baseline
    (the flipped questions of both runs read by id)."""
    verdict = stored.verdict
    depths = stored.result.depths
    if verdict is None:
        return Flips(depths=depths)
    changes = verdict.changes()
    flipped = _unique(
        [
            *verdict.flipped_to_miss,
            *verdict.flipped_to_hit,
            *verdict.top3_flipped_to_miss,
            *verdict.top3_flipped_to_hit,
            *(qid for c in changes.values() for qid in (*c.flipped_to_miss, *c.flipped_to_hit)),
        ]
    )
    mine = store.questions.by_id(stored.id, flipped)
    before = store.questions.by_id(baseline.id, flipped) if baseline else {}

    def detail(ids: list[str]) -> list[Flip]:
        out = []
        for qid in ids:
            q = mine.get(qid)
            old = before.get(qid)
            out.append(
                Flip(
                    id=qid,
                    question=q.question if q else "",
                    form=q.form.value if q else "",
                    hard_class=q.hard_class if q else None,
                    first_hit_rank=q.first_hit_rank if q else None,
                    baseline_first_hit_rank=old.first_hit_rank if old else None,
                    expected_document_ids=list(q.expected_document_ids) if q else [],
                    grades=q.grades if q else None,
                    retrieved=q.retrieved if q else [],
                    dead_ids=[d for d in q.expected_document_ids if d in dead] if q else [],
                )
            )
        return out

    deeper = {d: c for d, c in changes.items() if d not in (1, 3)}
    return Flips(
        top1_to_miss=detail(verdict.flipped_to_miss),
        top1_to_hit=detail(verdict.flipped_to_hit),
        top3_to_miss=detail(verdict.top3_flipped_to_miss),
        top3_to_hit=detail(verdict.top3_flipped_to_hit),
        to_miss_at={d: detail(c.flipped_to_miss) for d, c in deeper.items()},
        to_hit_at={d: detail(c.flipped_to_hit) for d, c in deeper.items()},
        depths=depths,
    )


__all__ = [
    "Comparison",
    "Drift",
    "History",
    "ListQuery",
    "Overview",
    "ReplayPage",
    "ReviewQueue",
    "RunView",
    "compare",
    "history",
    "overview",
    "run_view",
]
