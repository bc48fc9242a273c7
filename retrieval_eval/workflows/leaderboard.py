"""N retrievers on one golden set, as a leaderboard: :func:`compare_runs` over stored runs.

Each entry is one run: the figures of its :class:`~retrieval_eval.store.summary.RunSummary`
(top-1 and top-3 rates with 95 % Wilson intervals, error count, latency p50/p95), the rate and
interval at every other depth one of the runs gates (``hit_rate_at``), and MRR and the
deepest nDCG when the run's metrics hold them. Entries are ranked by top-1 rate, ties broken by top-3
rate and then by name (a run without questions, whose rates are ``None``, ranks last).

Every entry but the reference is compared with the reference on top-1, over the questions both
runs have: McNemar's exact test on the discordant questions
(:func:`~retrieval_eval.verdicts.regression.mcnemar_exact`), the paired change in top-1 rate
(``(only this − only reference) / shared``) with Newcombe's paired 95 % interval
(:func:`~retrieval_eval.evaluation.intervals.paired_difference`), and the p-value Holm-corrected across
the N − 1 comparisons (:func:`holm`). An entry is ``significant`` when its corrected p-value is
at most α (default 0.05): the family-wise error rate of all N − 1 verdicts together stays at α.
The reference is the best-ranked entry unless one is named.

Each entry also carries its *holes* (:mod:`retrieval_eval.labels.pooling`): the share of its
top ``holes_depth`` (default 10, as ``sets pool``; a run kept to top 3 is counted at 3) that is
not judged (:mod:`retrieval_eval.labels.judged`: neither its labels, grade 0 included, nor the
``judgments`` given, the store's, grade it), so a retriever that finds what the labellers never saw is seen to be judged
on fewer labels.

``differences`` lists the questions where the retrievers disagree on top-1 (at least one run
that has the question hits it and at least one misses it), in the best-ranked run's question
order (then questions only lower-ranked runs have), with every run's outcome (``None`` where a
run lacks the question).

Edge cases:

- Fewer than two runs is an error (a leaderboard of one compares nothing); so is the same run
  twice, a run of another set (``--runs``), and a retriever named twice or without a stored run
  on the set (the error names the set and the retriever and lists the retrievers that have runs,
  or the sets that have runs when this set has none, with the closest names: "did you mean").
- Two runs of the same retriever (``--runs``) are entries named ``retriever (run ID)``.
- Runs under different labels fingerprints (the golden set was edited between them) are compared
  anyway, with a warning in ``warnings``: differences may come from the labels.
- An invalid run (too many retriever errors; ``--runs`` can name one, and a retriever's latest
  run may be one) is ranked like any other, but its entry says ``valid: False`` (every format
  marks it) and a warning names it.
- A question missing from some runs is left out of the comparisons of those runs (each pair uses
  the questions both have; ``shared_questions`` says how many), and a warning says so.
- Ties in rate keep the name order, so the board is the same whichever order the runs came in.
- Equal outcomes on every shared question: no discordant pair, p = 1 (corrected: 1), a zero
  change with an interval around it (n agreements still leave the size of a change uncertain).
- No shared question at all: p = 1, no change and no interval.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field, SerializerFunctionWrapHandler, model_serializer

from retrieval_eval.errors import InvalidInputError, UnknownNameError
from retrieval_eval.evaluation.intervals import paired_difference, wilson
from retrieval_eval.evaluation.results import QuestionResult, as_pair, extra_depths
from retrieval_eval.labels.machine import judge_figures
from retrieval_eval.labels.pooling import DEPTH as HOLES_DEPTH
from retrieval_eval.labels.pooling import run_holes
from retrieval_eval.store.summary import RunSummary
from retrieval_eval.verdicts.significance import holm, mcnemar_exact

if TYPE_CHECKING:
    from retrieval_eval.labels.judgments import Judgment
    from retrieval_eval.store import Store
    from retrieval_eval.store.models import StoredRun

ALPHA = 0.05


class Versus(BaseModel):
    """One entry against the reference, on top-1 over the questions both runs have."""

    shared_questions: int
    top1_only_this: int  # hit here, missed by the reference
    top1_only_reference: int
    top1_delta: float | None  # (only_this - only_reference) / shared; None without shared
    top1_delta_ci: list[float] | None  # Newcombe's paired 95 % interval of that change
    p_value: float  # McNemar exact, two-sided
    p_holm: float  # Holm-corrected across the N - 1 comparisons
    significant: bool  # p_holm <= alpha


class Entry(BaseModel):
    """One run on the board: its summary's figures (the fields both models name) and more."""

    name: str  # the retriever, or "retriever (run ID)" when it has several runs here
    retriever: str
    run_id: int
    run_date: datetime
    labels_fingerprint: str
    question_count: int
    top1_hits: int
    top3_hits: int
    top1_hit_rate: float | None
    top3_hit_rate: float | None
    top1_hit_rate_ci: list[float] | None
    top3_hit_rate_ci: list[float] | None
    mrr: float | None
    mrr_metric: str | None = None  # which MRR: "mrr@12", over the ids the run fetched
    ndcg: float | None
    ndcg_metric: str | None  # which nDCG: "ndcg@3" (the run's deepest cutoff)
    error_count: int
    valid: bool  # False: too many retriever errors; ranked, but marked in every format
    latency_p50_ms: float | None
    latency_p95_ms: float | None
    is_reference: bool
    versus: Versus | None  # None for the reference itself
    # the rate and 95 % Wilson interval at each depth beyond top-1 and top-3 that one of the
    # board's runs gates: the run's own hits where it gates it, else counted from its
    # questions; None where it did not fetch that deep. Absent from the JSON when there is none
    hit_rate_at: dict[int, float | None] = Field(default_factory=dict)
    hit_rate_at_ci: dict[int, list[float] | None] = Field(default_factory=dict)
    # the share of its top ``holes_depth`` that is not judged (TREC pooling's
    # unjudged documents, counted as not relevant): the board's depth (default 10), or the
    # shallower depth the run kept its rankings to (``judging.pooling.run_holes``)
    holes_depth: int | None = None
    holes_unjudged: int | None = None
    holes_slots: int | None = None
    holes_share: float | None = None
    # with model judgments of the set (``rater = judge:<name>``): holes by who judged and the
    # hit rate three ways (:meth:`retrieval_eval.labels.machine.JudgeFigures.contract`); absent
    # from the JSON without them
    judge_figures: dict[str, Any] | None = None

    @model_serializer(mode="wrap")
    def _without_empty_depths(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        for key in ("hit_rate_at", "hit_rate_at_ci", "judge_figures"):
            if not data.get(key):
                data.pop(key, None)
        return data


class Outcome(BaseModel):
    top1_hit: bool
    top3_hit: bool
    first_hit_rank: int | None
    retrieved: list[str]
    error: str | None


class Difference(BaseModel):
    id: str
    question: str
    form: str
    hard_class: str | None
    expected_document_ids: list[str]
    outcomes: dict[str, Outcome | None]  # by entry name, in board order; None: not in that run


class Leaderboard(BaseModel):
    set: str
    reference: str  # the entry name every other entry is compared with
    reference_is_best: bool  # chosen as the best-ranked entry (not named by the caller)
    alpha: float
    same_labels: bool
    warnings: list[str]
    entries: list[Entry]  # ranked: top-1, then top-3, then name
    differences: list[Difference]

    def deeper_depths(self) -> list[int]:
        """The depths beyond top-1 and top-3 its runs gate (each entry has their rates)."""
        return sorted(self.entries[0].hit_rate_at) if self.entries else []


def latest_runs(source: Store, set_identifier: str, retrievers: Sequence[str]) -> list[StoredRun]:
    """The latest stored run of each retriever on the set, in the order given."""
    _check_count(len(retrievers), "retrievers")
    repeated = sorted(name for name, n in Counter(retrievers).items() if n > 1)
    if repeated:
        raise InvalidInputError(f"retriever named more than once: {', '.join(repeated)}")
    return [latest_run(source, set_identifier, retriever) for retriever in retrievers]


def latest_run(source: Store, set_identifier: str, retriever: str) -> StoredRun:
    """The retriever's latest stored run on the set; an error naming what is stored if none."""
    found = source.runs.history(set_identifier, retriever, limit=1)
    if not found:
        raise UnknownNameError(no_runs_message(source, set_identifier, retriever))
    return found[0]


def no_runs_message(source: Store, set_identifier: str, retriever: str) -> str:
    """Why (set, retriever) has no runs: the sets with runs when the set has none (a typo in
    the set), else the set's retrievers; with the closest names ("did you mean"). One query."""
    from retrieval_eval.safety.suggest import did_you_mean

    pairs = source.runs.stored_pairs()
    head = (
        f"no stored runs for set {set_identifier!r} and retriever {retriever!r} in "
        f"{source.display_url}"
    )
    sets = sorted({name for name, _ in pairs})
    if set_identifier not in sets:
        listed = _listed(sets)
        return f"{head}; sets with runs: {listed}{did_you_mean(set_identifier, sets)}"
    known = [name for set_name, name in pairs if set_name == set_identifier]
    return f"{head}; retrievers with runs on this set: {_listed(known)}" + did_you_mean(
        retriever, known
    )


def _listed(names: Sequence[str], most: int = 20) -> str:
    """Names for a message: at most ``most``, then how many more."""
    if not names:
        return "none"
    more = f" and {len(names) - most} more" if len(names) > most else ""
    return ", ".join(names[:most]) + more


def runs_by_id(source: Store, run_ids: Sequence[int]) -> list[StoredRun]:
    """The stored runs with these ids, in the order given (:func:`compare_runs` checks that
    they are of one set)."""
    _check_count(len(run_ids), "runs")
    repeated = sorted(i for i, n in Counter(run_ids).items() if n > 1)
    if repeated:
        raise InvalidInputError(f"run listed more than once: {', '.join(map(str, repeated))}")
    return [source.runs.get(run_id) for run_id in run_ids]


def _check_count(count: int, what: str) -> None:
    if count < 2:
        raise InvalidInputError(f"a comparison needs at least two {what}, got {count}")


def compare_runs(
    runs: Sequence[StoredRun],
    *,
    reference: str | None = None,
    alpha: float = ALPHA,
    holes_depth: int = HOLES_DEPTH,
    judgments: Sequence[Judgment] = (),
    model_judgments: Sequence[Judgment] | None = None,
) -> Leaderboard:
    """The leaderboard of these runs (of one set), compared with ``reference`` (an entry name:
    the retriever) or else with the best-ranked run; each entry's holes at ``holes_depth``,
    ``judgments`` (the set's stored ones, as they count: labels.judged.gate) counting as judged
    besides each run's labels. ``model_judgments`` (every stored row, calibrated or not; default
    ``judgments``) give the figures beside a model judge's labels, which carry its error."""
    _check_count(len(runs), "runs")
    if not 0 < alpha < 1:
        raise InvalidInputError(f"alpha must be between 0 and 1 (exclusive), got {alpha}")
    if len({run.id for run in runs}) < len(runs):
        raise InvalidInputError("the same run is listed more than once")
    if len({run.result.set_identifier for run in runs}) > 1:
        listed = ", ".join(f"run {r.id}: {r.result.set_identifier!r}" for r in runs)
        raise InvalidInputError(f"runs to compare must be of one golden set, got {listed}")
    names = _names(runs)
    ranked = sorted(zip(names, runs, strict=True), key=lambda pair: _rank_key(*pair))
    if reference is None:
        ref_name = ranked[0][0]
    elif reference in names:
        ref_name = reference
    else:
        raise UnknownNameError(
            f"reference {reference!r} is not among the compared retrievers: {', '.join(names)}"
        )
    ref_run = runs[names.index(ref_name)]
    depths = extra_depths(sorted({d for run in runs for d in run.result.depths}))
    others = [(name, run) for name, run in ranked if name != ref_name]
    tables = {name: _paired(run, ref_run) for name, run in others}
    p_values = {name: mcnemar_exact(t[True, False], t[False, True]) for name, t in tables.items()}
    adjusted = dict(zip(p_values, holm(list(p_values.values())), strict=True))
    entries = [
        _entry(
            name,
            run,
            None
            if name == ref_name
            else _versus(tables[name], p_values[name], adjusted[name], alpha),
            depths,
            holes_depth,
            judgments,
            judgments if model_judgments is None else model_judgments,
        )
        for name, run in ranked
    ]
    fingerprints = {run.result.labels_fingerprint for run in runs}
    return Leaderboard(
        set=runs[0].result.set_identifier,
        reference=ref_name,
        reference_is_best=reference is None,
        alpha=alpha,
        same_labels=len(fingerprints) == 1,
        warnings=_warnings(ranked),
        entries=entries,
        differences=_differences(ranked),
    )


def _names(runs: Sequence[StoredRun]) -> list[str]:
    counts = Counter(run.result.retriever for run in runs)
    return [
        run.result.retriever
        if counts[run.result.retriever] == 1
        else f"{run.result.retriever} (run {run.id})"
        for run in runs
    ]


def _rank_key(name: str, run: StoredRun) -> tuple[float, float, str]:
    r = run.result
    top1 = -1.0 if r.top1_hit_rate is None else r.top1_hit_rate
    top3 = -1.0 if r.top3_hit_rate is None else r.top3_hit_rate
    return -top1, -top3, name


def _paired(run: StoredRun, reference: StoredRun) -> Counter[tuple[bool, bool]]:
    """The paired 2×2 top-1 table of ``run`` (first) and ``reference`` on shared questions."""
    theirs = {q.id: q.top1_hit for q in reference.result.questions}
    return Counter((q.top1_hit, theirs[q.id]) for q in run.result.questions if q.id in theirs)


def _versus(table: Counter[tuple[bool, bool]], p: float, p_holm: float, alpha: float) -> Versus:
    only_this, only_ref = table[True, False], table[False, True]
    shared = sum(table.values())
    interval = paired_difference(table[True, True], only_this, only_ref, table[False, False])
    return Versus(
        shared_questions=shared,
        top1_only_this=only_this,
        top1_only_reference=only_ref,
        top1_delta=(only_this - only_ref) / shared if shared else None,
        top1_delta_ci=as_pair(interval),
        p_value=p,
        p_holm=p_holm,
        significant=p_holm <= alpha,
    )


_FROM_SUMMARY = Entry.model_fields.keys() & RunSummary.model_fields.keys()


def _hits(run: StoredRun, depth: int) -> int | None:
    """The run's hits at ``depth``: its own where it gates it, else counted from its questions
    when it fetched that deep (None otherwise)."""
    result = run.result
    hits = result.hits(depth) if depth in result.depths else None
    if hits is None and depth <= result.settings.fetch_limit and result.questions:
        hits = sum(q.hit_at(depth) for q in result.questions)
    return hits


def _entry(
    name: str,
    run: StoredRun,
    versus: Versus | None,
    depths: Sequence[int],
    holes_depth: int = HOLES_DEPTH,
    judgments: Sequence[Judgment] = (),
    model_judgments: Sequence[Judgment] = (),
) -> Entry:
    summary = RunSummary.of(run, slices=False)
    holes = run_holes(run.result, holes_depth, judgments)
    figures = judge_figures(run.result, model_judgments, depth=holes_depth)
    n = run.result.question_count
    at = {depth: _hits(run, depth) for depth in depths}
    metrics = run.result.metrics
    ndcg = [k for k in metrics if k.startswith("ndcg@")]
    deepest = max(ndcg, key=lambda k: int(k.partition("@")[2])) if ndcg else None
    return Entry(
        name=name,
        **summary.model_dump(include=_FROM_SUMMARY),  # mrr among them
        mrr_metric=run.result.settings.shown_metric("mrr") if "mrr" in metrics else None,
        ndcg=metrics.get(deepest) if deepest else None,
        ndcg_metric=deepest,
        valid=summary.status == "valid",
        is_reference=versus is None,
        versus=versus,
        hit_rate_at={d: None if h is None or not n else h / n for d, h in at.items()},
        hit_rate_at_ci={d: None if h is None else as_pair(wilson(h, n)) for d, h in at.items()},
        holes_depth=holes.depth,
        holes_unjudged=holes.unjudged,
        holes_slots=holes.slots,
        holes_share=holes.share,
        judge_figures=None if figures is None else figures.contract(),
    )


def _warnings(ranked: list[tuple[str, StoredRun]]) -> list[str]:
    warnings = []
    by_fingerprint: dict[str, list[str]] = {}
    for name, run in ranked:
        # a name already "retriever (run ID)" (several runs of one retriever) names its run
        named = name if name != run.result.retriever else f"{name} (run {run.id})"
        by_fingerprint.setdefault(run.result.labels_fingerprint, []).append(named)
        if run.status != "valid":
            r = run.result
            warnings.append(
                f"{named} is an invalid run ({r.error_count} of {r.question_count} questions "
                "errored): its rates say more about the errors than the retrieval; compare a "
                "valid run of it"
            )
    if len(by_fingerprint) > 1:
        groups = "; ".join(", ".join(group) for group in by_fingerprint.values())
        warnings.append(
            f"the runs used different labels (the golden set was edited between them): {groups}; "
            "differences may come from the labels, not the retrievers"
        )
    ids = [{q.id for q in run.result.questions} for _, run in ranked]
    missing = len(ids[0].union(*ids[1:]) - ids[0].intersection(*ids[1:]))
    if missing:
        warnings.append(
            f"{missing} question(s) are missing from some runs; each comparison uses the "
            "questions both runs have"
        )
    return warnings


def _outcome(q: QuestionResult | None) -> Outcome | None:
    """How ``q`` fared, in the fields of the same names; None when the run does not have it."""
    return None if q is None else Outcome.model_validate(q, from_attributes=True)


def _differences(ranked: list[tuple[str, StoredRun]]) -> list[Difference]:
    by_name = {name: {q.id: q for q in run.result.questions} for name, run in ranked}
    order: dict[str, QuestionResult] = {}  # every question id, first run's order first
    for _, run in ranked:
        for q in run.result.questions:
            order.setdefault(q.id, q)
    out = []
    for qid, first in order.items():
        found = {name: questions.get(qid) for name, questions in by_name.items()}
        if len({q.top1_hit for q in found.values() if q is not None}) < 2:
            continue
        out.append(
            Difference(
                id=qid,
                question=first.question,
                form=first.form.value,
                hard_class=first.hard_class,
                expected_document_ids=list(first.expected_document_ids),
                outcomes={name: _outcome(q) for name, q in found.items()},
            )
        )
    return out
