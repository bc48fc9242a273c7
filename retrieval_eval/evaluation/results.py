"""What a run produces: per-question results and their aggregates, as pydantic models.

:func:`retrieval_eval.evaluation.aggregate.summarise` builds a :class:`RunResult` from per-question results;
:meth:`RunResult.to_frame` gives the per-question
results as a DataFrame for your own analysis, and it alone imports pandas: a run never needs
pandas, so ``retrieval-eval run`` does not pay for importing it.

Edge cases, written down once:

- A group with no questions has rates ``None`` (never a division by zero). Both forms are always
  listed in ``by_form``; ``by_hard_class`` lists only classes that occur. Questions without a hard
  class count in the overall figures only.
- Latency percentiles (linear interpolation) are over questions whose retrieval succeeded; they
  are ``None`` when no call succeeded.
- ``valid`` is ``error_count / question_count <= max_error_rate``.
- ``dead_labels`` (:mod:`retrieval_eval.evaluation.labels`) is None when no check ran. A question all of
  whose targets are dead is a *stale label*: its result stays as scored (a miss, usually) and it
  counts in every figure of the run, but :meth:`RunResult.stale_targets` names it, reports mark
  it, the JSON contract gives it ``"stale_label": true`` and its ``"dead_ids"``, and the
  regression judgement leaves it out (:mod:`retrieval_eval.verdicts.regression`).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from retrieval_eval.evaluation import MAX_DEPTH
from retrieval_eval.evaluation.intervals import Interval, rate_interval, wilson
from retrieval_eval.evaluation.labels import DeadLabels
from retrieval_eval.golden.forms import QuestionForm

if TYPE_CHECKING:
    import pandas as pd

TOP_K = 3
OVERFETCH_MULTIPLIER = 4
DEPTHS = (1, TOP_K)  # the gated depths unless a config says otherwise: top-1 and top-3


def checked_depths(depths: Sequence[int]) -> list[int]:
    """The gated depths as given, or ValueError saying what is wrong and how to write them:
    at least one, each a whole number from 1 to MAX_DEPTH, in increasing order, none twice."""
    example = "e.g. [1, 3] or [1, 5]"
    values = list(depths)
    if not values:
        raise ValueError(f"depths must name at least one depth, {example}")
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_DEPTH:
            raise ValueError(
                f"depth {value!r} is not a whole number from 1 to {MAX_DEPTH}; give depths such "
                f"as [1, 3, 5, 10]"
            )
    repeated = sorted({v for v in values if values.count(v) > 1})
    if repeated:
        raise ValueError(f"depth {repeated[0]} is listed twice; list each depth once, {example}")
    if values != sorted(values):
        raise ValueError(
            f"depths must be in increasing order: write {sorted(values)}, not {values}"
        )
    return values


MAX_INDEX_VERSION = 200  # characters of an index version kept: a label, not a document


def index_version_text(value: object) -> str | None:
    """An index version as it is stored: text, stripped, at most :data:`MAX_INDEX_VERSION`
    characters, any lone surrogate escaped (it comes from an asset event's JSON or the command
    line, neither of which promises Unicode text); None when absent or blank."""
    from retrieval_eval.safety.surrogates import escaped

    if value is None:
        return None
    text = escaped(str(value)).strip()[:MAX_INDEX_VERSION]
    return text or None


class QuestionResult(BaseModel):
    """How one question fared. ``retrieved`` holds distinct ids, best first, to the deepest cutoff."""

    model_config = ConfigDict(defer_build=True)  # schema built at first use, not at import

    id: str
    question: str = ""
    form: QuestionForm
    hard_class: str | None = None
    expected_document_ids: tuple[str, ...] = ()  # the targets at the run's relevance level
    # a graded question's judged grades (its GoldenQuestion.relevance, shared): nDCG's gains
    grades: dict[str, int] | None = None
    top1_hit: bool
    top3_hit: bool
    first_hit_rank: int | None = None
    retrieved: list[str] = Field(default_factory=list)
    latency_ms: float | None = None
    error: str | None = None

    def hit_at(self, depth: int) -> bool:
        """Whether the question is a hit at ``depth`` by the scoring rules: a target among the
        first ``depth`` distinct documents (``first_hit_rank`` counts over everything fetched);
        with no targets, nothing came back; never when the call failed."""
        if depth == 1:
            return self.top1_hit
        if depth == TOP_K:
            return self.top3_hit
        if self.error is not None:
            return False
        if not self.expected_document_ids:
            return not self.retrieved
        return self.first_hit_rank is not None and self.first_hit_rank <= depth

    @classmethod
    def of_scorer(cls, values: dict[str, Any]) -> QuestionResult:
        """A result from the scorer's own values (every field, ids checked by
        ``check_ranking``): pydantic's ``model_construct`` with one shared fields set, where
        validation would give each result its own set (~0.7 KB: 70 MiB per 100,000)."""
        return cls.model_construct(_ALL_FIELDS, **values)


_ALL_FIELDS = set(QuestionResult.model_fields)


class AtDepths(BaseModel):
    """Hits, rates and 95 % Wilson intervals at every gated depth, for a run or one of its
    slices (or their stored summaries). ``hits_at`` holds each gated depth's hits; top-1 and
    top-3, which the seed's fields also hold, are read from those when a depth is not in it
    (runs stored before depths were configurable)."""

    model_config = ConfigDict(defer_build=True)  # schema built at first use, not at import

    hits_at: dict[int, int] = Field(default_factory=dict)

    def counted(self) -> int:
        """How many questions the rates are over."""
        raise NotImplementedError

    def hits(self, depth: int) -> int | None:
        """Hits at ``depth``; None when it was not judged."""
        found = self.hits_at.get(depth)
        if found is None and depth in DEPTHS:
            found = getattr(self, f"top{depth}_hits", None)
        return found

    def hit_rate(self, depth: int) -> float | None:
        """The hit rate at ``depth``; None for no questions or a depth not judged."""
        hits, n = self.hits(depth), self.counted()
        return None if hits is None or not n else hits / n

    def hit_rate_ci(self, depth: int) -> Interval | None:
        """The 95 % Wilson interval of :meth:`hit_rate` (None where the rate is)."""
        hits = self.hits(depth)
        return None if hits is None else wilson(hits, self.counted())


class SeedIntervals(AtDepths):
    """The seed's top-1 and top-3 95 % Wilson intervals (see
    :mod:`retrieval_eval.evaluation.intervals`), of the hits its ``top1_hits`` and ``top3_hits``
    fields hold, over :meth:`counted` questions: a run's and a slice's (None when empty)."""

    if TYPE_CHECKING:  # the fields of each subclass, declared there (their order is the JSON's)
        top1_hits: int
        top3_hits: int

    @property
    def top1_hit_rate_ci(self) -> Interval | None:
        return wilson(self.top1_hits, self.counted())

    @property
    def top3_hit_rate_ci(self) -> Interval | None:
        return wilson(self.top3_hits, self.counted())


def extra_depths(depths: Sequence[int]) -> list[int]:
    """The gated depths beyond the seed's top-1 and top-3: the ones the JSON contract, the CSV
    and the stored details add ``top{k}_...`` keys for (top-1 and top-3 always have theirs)."""
    return [d for d in depths if d not in DEPTHS]


def miss_depth(depths: Sequence[int]) -> int:
    """The gated depth a listed miss is counted at: the deepest, the widest gate a question can
    fail. The report's question table and the run page's order, ``misses`` filter and row marks
    all count there, so both lead with the same questions."""
    return max(depths)


def depth_intervals(figures: AtDepths, depths: Sequence[int]) -> dict[str, list[float] | None]:
    """``top{k}_hit_rate_ci`` for each of ``depths``: the keys of the JSON and stored details."""
    return {f"top{d}_hit_rate_ci": as_pair(figures.hit_rate_ci(d)) for d in depths}


class SliceRates(SeedIntervals):
    questions: int
    top1_hits: int
    top3_hits: int
    top1_hit_rate: float | None
    top3_hit_rate: float | None

    def counted(self) -> int:
        return self.questions

    def intervals(self) -> dict[str, list[float] | None]:
        """The ``*_ci`` keys of the JSON report and the stored details: ``[low, high]`` or null."""
        return {
            "top1_hit_rate_ci": as_pair(self.top1_hit_rate_ci),
            "top3_hit_rate_ci": as_pair(self.top3_hit_rate_ci),
        }


class Latency(BaseModel):
    model_config = ConfigDict(defer_build=True)  # schema built at first use, not at import

    p50: float | None = None
    p95: float | None = None


class RunSettings(BaseModel):
    model_config = ConfigDict(defer_build=True)  # schema built at first use, not at import

    top_k: int = TOP_K
    overfetch_multiplier: int = OVERFETCH_MULTIPLIER
    cutoffs: list[int] = Field(default_factory=lambda: [1, TOP_K])
    # the depths the verdict gates on (thresholds, intervals, slices, flips, McNemar each);
    # runs stored before depths were configurable read back as the seed's top-1 and top-3
    depths: list[int] = Field(default_factory=lambda: list(DEPTHS))
    timeout_s: float | None = 30.0
    max_error_rate: float = 0.0
    max_concurrency: int | None = None
    # the grade a document needs to count as a target in the hit rates, recall and MRR (graded
    # labels; nDCG takes every grade as its gain); runs stored before grades read back as 1
    relevance_level: int = Field(default=1, ge=1, le=3)

    @field_validator("depths")
    @classmethod
    def _depths(cls, value: list[int]) -> list[int]:
        return checked_depths(value)

    @property
    def depth(self) -> int:
        """How many distinct documents are judged and kept per question: the deepest gated
        depth or cutoff (at least ``top_k``)."""
        return max([self.top_k, *self.cutoffs, *self.depths])

    @property
    def fetch_limit(self) -> int:
        """What the retriever is asked for: the deepest depth times the overfetch multiplier."""
        return self.depth * self.overfetch_multiplier

    def shown_metric(self, name: str) -> str:
        """A metric's name where a person reads it: MRR names the ids it saw, ``mrr@12`` (the
        fetch), so nobody takes it for a whole-run reciprocal rank (trec_eval's ``recip_rank``
        reads up to 1,000 lines a query). Keys (JSON, CSV, the store) stay ``mrr``."""
        return f"mrr@{self.fetch_limit}" if name == "mrr" else name


class Rejudged(BaseModel):
    """What a re-judged run (``sets rejudge``) is: a stored run's rankings scored again against
    other labels, without calling the retriever. ``known_depth`` is how deep its ranks can be
    told (the documents the original run kept, where a run's own first-hit rank covers all it
    fetched); the gated depths beyond it (``depths_not_judged``) and the metrics that read
    deeper (``not_recomputed``: MRR reads the whole fetch) are left out. ``not_asked``: questions
    of the new labels the original run never asked (new, or reworded), left out of the run and
    of comparisons with it; ``dropped``: the original's questions the new labels no longer have.
    """

    model_config = ConfigDict(defer_build=True)

    from_run_id: int
    from_labels_fingerprint: str
    from_set_version: int | None = None
    known_depth: int
    depths_not_judged: list[int] = Field(default_factory=list)
    not_recomputed: list[str] = Field(default_factory=list)
    not_asked: list[str] = Field(default_factory=list)
    dropped: list[str] = Field(default_factory=list)

    def shortfall(self) -> str | None:
        """What could not be judged again, in words; None when everything was."""
        parts = []
        if self.depths_not_judged:
            depths = ", ".join(f"top-{d}" for d in self.depths_not_judged)
            parts.append(
                f"{depths} not judged: the stored rankings hold {self.known_depth} documents"
            )
        if self.not_recomputed:
            parts.append(f"not recomputed: {', '.join(self.not_recomputed)}")
        if self.not_asked:
            parts.append(f"{len(self.not_asked)} question(s) the run never asked left out")
        return "; ".join(parts) or None


class RunResult(SeedIntervals):
    """One evaluation of one retriever on one golden set; ``hits_at``: hits at each gated
    depth (``settings.depths``), as ``by_form`` and ``by_hard_class`` have them per slice."""

    run_key: str = Field(default_factory=lambda: uuid.uuid4().hex)
    set_identifier: str
    set_name: str = ""
    corpus_revision: str | None = None
    labels_fingerprint: str
    retriever: str
    started_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    finished_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    settings: RunSettings = Field(default_factory=RunSettings)
    question_count: int
    top1_hits: int
    top3_hits: int
    top1_hit_rate: float | None
    top3_hit_rate: float | None
    error_count: int
    valid: bool
    by_form: dict[str, SliceRates]
    by_hard_class: dict[str, SliceRates]
    latency_ms: Latency
    metrics: dict[str, float | None] = Field(default_factory=dict)
    questions: list[QuestionResult]
    dead_labels: DeadLabels | None = None
    # the DAG's lint task: its mode, finding counts by severity and the first findings (stored in
    # the run's details, shown with the run); None when no lint ran
    lint: dict[str, Any] | None = None
    # the index build measured (an asset event's ``extra``, or ``run --index-version``) and the
    # retrieval-eval version that scored the run; None on runs stored before they were kept
    index_version: str | None = None
    package_version: str | None = None
    # the set file's version (``sets promote``) the labels come from; None: not versioned
    set_version: int | None = None
    # set on a re-judged run: which run's rankings, judged against which labels before
    rejudged: Rejudged | None = None

    @field_validator("index_version", mode="before")
    @classmethod
    def _index_version(cls, value: object) -> str | None:
        return index_version_text(value)

    def counted(self) -> int:
        return self.question_count

    @property
    def depths(self) -> list[int]:
        """The gated depths, shallowest first."""
        return self.settings.depths

    @property
    def known_depth(self) -> int:
        """How deep a hit can be told from the stored questions: everything fetched (a first-hit
        rank covers it), or only the kept documents for a re-judged run."""
        return self.rejudged.known_depth if self.rejudged else self.settings.fetch_limit

    def stale_targets(self) -> dict[str, list[str]]:
        """Stale questions (every target dead) -> their dead ids; empty when none or unchecked."""
        labels = self.dead_labels
        if labels is None or not labels.stale_questions:
            return {}
        dead = set(labels.dead_ids)
        stale = set(labels.stale_questions)
        return {
            q.id: sorted({d for d in q.expected_document_ids if d in dead})
            for q in self.questions
            if q.id in stale
        }

    @property
    def error_rate(self) -> float:
        return self.error_count / self.question_count if self.question_count else 0.0

    @property
    def metrics_ci(self) -> dict[str, Interval | None]:
        """95 % Wilson intervals of the metrics that are proportions: ``hit_rate@k`` (over every
        question). recall, MRR and nDCG are means of per-question values, not proportions: they
        have no Wilson interval and are not listed."""
        return {
            name: rate_interval(value, self.question_count)
            for name, value in self.metrics.items()
            if name.startswith("hit_rate@")
        }

    def intervals(self) -> dict[str, Any]:
        """The ``*_ci`` keys of the JSON report and the stored details (``[low, high]`` or null):
        ``top1_hit_rate_ci``, ``top3_hit_rate_ci`` and ``metrics_ci`` (``hit_rate@k`` only)."""
        return {
            "top1_hit_rate_ci": as_pair(self.top1_hit_rate_ci),
            "top3_hit_rate_ci": as_pair(self.top3_hit_rate_ci),
            **depth_intervals(self, extra_depths(self.depths)),
            "metrics_ci": {name: as_pair(ci) for name, ci in self.metrics_ci.items()},
        }

    def to_frame(self) -> pd.DataFrame:
        """The per-question results, one row per question (a ``top{k}_hit`` column for each
        gated depth beyond top-1 and top-3)."""
        frame = questions_frame(self.questions)
        for depth in extra_depths(self.depths):
            frame[f"top{depth}_hit"] = [q.hit_at(depth) for q in self.questions]
        return frame

    def contract(self) -> dict[str, Any]:
        """The stable JSON document other tools read (``--format json``). ``depths`` lists the
        gated depths; each one beyond top-1 and top-3 adds ``top{k}_hits``, ``top{k}_hit_rate``
        and ``top{k}_hit_rate_ci`` (overall and per slice) and ``top{k}_hit`` per question."""
        extra = extra_depths(self.depths)
        return {
            "set": self.set_identifier,
            "retriever": self.retriever,
            "run_key": self.run_key,
            "labels_fingerprint": self.labels_fingerprint,
            "corpus_revision": self.corpus_revision,
            "index_version": self.index_version,
            "package_version": self.package_version,
            "started_at": self.started_at.isoformat(),
            "finished_at": self.finished_at.isoformat(),
            "question_count": self.question_count,
            "top1_hits": self.top1_hits,
            "top3_hits": self.top3_hits,
            "top1_hit_rate": self.top1_hit_rate,
            "top3_hit_rate": self.top3_hit_rate,
            "depths": list(self.depths),
            **{f"top{d}_hits": self.hits(d) for d in extra},
            **{f"top{d}_hit_rate": self.hit_rate(d) for d in extra},
            "error_count": self.error_count,
            "valid": self.valid,
            "by_form": _slices_contract(self.by_form, extra),
            "by_hard_class": _slices_contract(self.by_hard_class, extra),
            "latency_ms": self.latency_ms.model_dump(),
            "metrics": self.metrics,
            **self.intervals(),
            "settings": self.settings.model_dump(),
            "dead_labels": self.dead_labels.model_dump() if self.dead_labels else None,
            "questions": _questions_contract(self.questions, self.stale_targets(), extra),
        }


def _questions_contract(
    questions: list[QuestionResult], stale: dict[str, list[str]], extra: Sequence[int] = ()
) -> list[dict[str, Any]]:
    """Every question's contract; a stale one also carries ``stale_label`` and ``dead_ids``,
    and each depth of ``extra`` (beyond top-1 and top-3) adds ``top{k}_hit``."""
    rows = [_question_contract(q) for q in questions]
    for depth in extra:
        key = f"top{depth}_hit"
        for row, q in zip(rows, questions, strict=True):
            row[key] = q.hit_at(depth)
    if stale:
        for row in rows:
            if row["id"] in stale:
                row["stale_label"] = True
                row["dead_ids"] = stale[row["id"]]
    return rows


def _question_contract(q: QuestionResult) -> dict[str, Any]:
    """One question of the contract: what ``model_dump(mode="json", include=...)`` gives, read
    straight from the attributes, which skips pydantic's serializer on every question of a large
    run. ``tests/evaluation/test_results.py`` checks the two agree."""
    return {
        "id": q.id,
        "form": str(q.form),  # a StrEnum's str() is its value
        "hard_class": q.hard_class,
        **question_outcome(q),
    }


def question_outcome(q: QuestionResult) -> dict[str, Any]:
    """What retrieval did for one question, under the names both the JSON contract and the
    store's question rows use: one list of those fields, so the two cannot drift apart."""
    return {
        "top1_hit": q.top1_hit,
        "top3_hit": q.top3_hit,
        "first_hit_rank": q.first_hit_rank,
        "retrieved": list(q.retrieved),
        "latency_ms": q.latency_ms,
        "error": q.error,
    }


def _slices_contract(
    slices: dict[str, SliceRates], extra: Sequence[int] = ()
) -> dict[str, dict[str, Any]]:
    return {
        value: {
            "questions": s.questions,
            "top1_hit_rate": s.top1_hit_rate,
            "top3_hit_rate": s.top3_hit_rate,
            **s.intervals(),
            **{f"top{d}_hit_rate": s.hit_rate(d) for d in extra},
            **depth_intervals(s, extra),
        }
        for value, s in slices.items()
    }


def as_pair(interval: Interval | None) -> list[float] | None:
    """An interval as JSON has it: ``[low, high]``, or null."""
    return None if interval is None else [interval[0], interval[1]]


_FRAME_COLUMNS = [
    "id",
    "question",
    "form",
    "hard_class",
    "expected_document_ids",
    "top1_hit",
    "top3_hit",
    "first_hit_rank",
    "retrieved",
    "latency_ms",
    "error",
]


def questions_frame(
    questions: list[QuestionResult], columns: Sequence[str] = tuple(_FRAME_COLUMNS)
) -> pd.DataFrame:
    """The per-question results, one row per question (``columns``: a subset, in that order)."""
    import pandas as pd

    # one C-level attrgetter pass, transposed, rather than a model_dump per question
    names = list(columns)
    if not questions:  # with no rows every column stays object dtype, as it always has
        frame = pd.DataFrame([], columns=names)
    else:
        rows = map(attrgetter(*names), questions)
        data: dict[str, Any] = dict(zip(names, zip(*rows, strict=True), strict=True))
        form_value = {form: form.value for form in QuestionForm}
        for name, values in data.items():
            if name == "form":
                data[name] = [form_value[v] for v in values]
            elif name in ("expected_document_ids", "retrieved"):
                data[name] = [list(v) for v in values]  # copies: the frame must not alias models
            else:
                data[name] = list(values)
        frame = pd.DataFrame(data, columns=names)
    if "first_hit_rank" in frame:
        frame["first_hit_rank"] = frame["first_hit_rank"].astype("Int64")
    for name in ("top1_hit", "top3_hit"):
        if name in frame:
            frame[name] = frame[name].astype(bool)
    return frame
