"""The YAML config shared by the CLI and the DAG factory.

Relative paths inside a config resolve against the config file's folder, so a config works from
any working directory. Lookup order for the file: ``--config``, ``$RETRIEVAL_EVAL_CONFIG``, then
``./retrieval_eval.yaml`` when present; with none, an empty config (sets and retrievers can still be
given as paths), and an unknown set or retriever name says where the file was looked for
(:func:`lookup_note`). A config is at most 1 MiB; anchors and aliases may expand it to at most 100,000
values, nested at most 50 levels (:mod:`retrieval_eval.safety.limits`).

.. code-block:: yaml

    store: sqlite:///results.sqlite        # optional; --db and $RETRIEVAL_EVAL_DB win
    sets:
      - golden/handbook.yaml               # a set file
      - {directory: golden/more}           # every set file in a folder
      - {path: faq.csv, identifier: faq}   # JSONL/CSV with an explicit identifier
    retrievers:
      handbook_bm25: {type: lexical, corpus: corpus/}
    run: {timeout_s: 30, max_error_rate: 0.0, depths: [1, 3]}   # depths: the gated depths
    thresholds: {max_top1_drop: 0.10, max_top3_drop: 0.10, min_slice_questions: 5}
    lint: warn                             # or {mode: fail, match_min_overlap: 0.2, ...}
    dead_labels_baseline: refuse           # or allow: may a run with stale labels be a baseline
    evaluations:
      - {set: handbook.demo, retriever: handbook_bm25, schedule: "0 3 * * *"}
    samples:                               # production queries to replay (no labels)
      traffic: {source: {path: logs/queries.jsonl}, method: pps, size: 2000, seed: 1}
    replays:
      - {sample: traffic, retriever: handbook_bm25, assets: [index_rebuilt]}
    drift: {min_mean_rbo: 0.8, max_top1_changed: 0.2}
    judges:                                # model judges for pooled pairs (sets judge auto)
      gpt: {type: openai, model: gpt-4o-mini, api_key_from_env: OPENAI_API_KEY, max_cost_usd: 5}
    review: {raters_per_pair: 2}            # people per pair before it leaves the review queue
"""

import re
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

# the lookup and the defaults live apart so a command can use them without these models
from retrieval_eval.config.lookup import (
    MAX_DROP,
    MAX_TOP1_DROP,
    MAX_TOP3_DROP,
    POWER,
    POWER_ALPHA,
    POWER_CHURN,
    Severity,
    find_config,
    lookup_note,
)
from retrieval_eval.errors import ConfigError, GoldenSetError
from retrieval_eval.evaluation import MAX_DEPTH
from retrieval_eval.golden.forms import QuestionForm
from retrieval_eval.replay.specs import DriftThresholds, SampleSpec
from retrieval_eval.safety.limits import MAX_CONFIG_FILE_BYTES, refuse_too_large, shorten

if TYPE_CHECKING:
    # imported where used: the DAG file reads configs at parse time, and these pull in the set
    # loaders, the adapters' registry and pandas, none of which parsing needs
    from retrieval_eval.evaluation.results import RunSettings
    from retrieval_eval.golden.registry import GoldenSetRegistry
    from retrieval_eval.retrievers.registry import RetrieverRegistry


class SetSource(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    path: Path | None = None
    """A golden set file (YAML, JSON, JSONL or CSV); a plain string is shorthand for this."""
    directory: Path | None = None
    """A folder whose set files are all registered."""
    identifier: str | None = None
    """The set's identifier for a JSONL or CSV file, which cannot say it itself."""

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        return {"path": value} if isinstance(value, str) else value

    @model_validator(mode="after")
    def _one_kind(self) -> "SetSource":
        if (self.path is None) == (self.directory is None):
            raise ValueError("give exactly one of 'path' or 'directory'")
        return self


_DEPTH_DROP = re.compile(r"max_top([0-9]+)_drop")

_SLICE_DIMENSIONS = ("form", "hard_class")


def _depth_keys_into_drops(value: Any) -> Any:
    """``max_topK_drop`` keys of depths other than 1 and 3 into ``max_drops``, checked."""
    if not isinstance(value, dict):
        return value
    kept: dict[str, Any] = {}
    drops = dict(value.get("max_drops") or {})
    for key, given in value.items():
        found = _DEPTH_DROP.fullmatch(key) if isinstance(key, str) else None
        if found is None or int(found[1]) in (1, 3):
            kept[key] = given
            continue
        depth = int(found[1])
        if not 1 <= depth <= MAX_DEPTH:
            raise ValueError(f"{key}: depths run from 1 to {MAX_DEPTH}")
        if isinstance(given, bool) or not isinstance(given, int | float) or not 0 <= given <= 1:
            raise ValueError(
                f"{key} must be an absolute rate drop between 0 and 1 (0.10 = ten points), "
                f"got {given!r}"
            )
        drops[depth] = float(given)
    if drops:
        kept["max_drops"] = drops
    return kept


class PowerOptions(BaseModel):
    """Power: McNemar at ``alpha`` (two-sided) with ``power``; ``churn`` = the share of questions
    assumed to flip miss -> hit while a drop of d flips d + churn hit -> miss. Set under
    ``lint:``; the verdict's slice rule uses the same (``Thresholds.power``)."""

    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    alpha: float = Field(default=POWER_ALPHA, gt=0, lt=1)
    """The significance level of the two-sided McNemar test the power figure assumes."""
    power: float = Field(default=POWER, gt=0, lt=1)
    """The chance of seeing a drop of the threshold's size that the figure asks for."""
    churn: float = Field(default=POWER_CHURN, ge=0, le=0.5)
    """The share of questions assumed to flip miss → hit while a drop of d flips d + churn hit →
    miss."""


class SliceThresholds(BaseModel):
    """One slice's own thresholds (``thresholds.slices["form=match"]``): any ``max_topK_drop``
    and a ``severity``; what it does not give comes from the thresholds around it."""

    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    max_top1_drop: float | None = Field(default=None, ge=0, le=1)
    """This slice's largest allowed top-1 drop (absolute, 0.10 = ten points); unset: the
    thresholds' own."""
    max_top3_drop: float | None = Field(default=None, ge=0, le=1)
    """This slice's largest allowed top-3 drop; unset: the thresholds' own."""
    max_drops: dict[int, float] = {}
    """This slice's drops at other gated depths, written `max_topK_drop` (e.g. `max_top5_drop`)."""
    severity: Severity | None = None
    """What this slice's checks do when they fire (`error` regresses, `warn` only warns); unset:
    the thresholds' severity."""

    @model_validator(mode="before")
    @classmethod
    def _depth_keys(cls, value: Any) -> Any:
        return _depth_keys_into_drops(value)

    def max_drop(self, depth: int) -> float | None:
        """This slice's own drop at ``depth``, None when it has none."""
        if depth in (1, 3):
            return getattr(self, f"max_top{depth}_drop")
        return self.max_drops.get(depth)


class Thresholds(BaseModel):
    """Regression thresholds: absolute rate drops; a drop strictly greater than one regresses.

    Each gated depth K has ``max_topK_drop`` (``max_top5_drop: 0.05``); one not given allows
    the default drop, ten points. Those of depths other than 1 and 3 are kept in ``max_drops``.
    ``severity`` (``error`` or ``warn``) is that of every check; ``slices`` (keyed
    ``form=match``, ``hard_class=near-duplicate``) gives a slice its own drops and severity.
    ``power`` is not written here: the config copies its ``lint:`` alpha, power and churn into
    it (:class:`Config`), so the verdict's slice rule and ``sets lint`` use one power figure.
    """

    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    max_top1_drop: float = Field(default=MAX_TOP1_DROP, ge=0, le=1)
    """The largest allowed top-1 hit-rate drop against the baseline (absolute: 0.10 = ten points);
    a larger one regresses."""
    max_top3_drop: float = Field(default=MAX_TOP3_DROP, ge=0, le=1)
    """The largest allowed top-3 hit-rate drop against the baseline."""
    max_drops: dict[int, float] = {}
    """Drops at the other gated depths, written `max_topK_drop` (e.g. `max_top5_drop: 0.05`); a
    depth not given allows ten points."""
    min_slice_questions: int = Field(default=5, ge=1)
    """Slices (by form, by hard class) with fewer questions than this in either run are not judged.
"""
    max_latency_p95_increase: float | None = Field(default=None, ge=0)
    """The largest allowed p95 latency increase as a ratio (0.5 = 50 % slower); unset: latency
    never regresses."""
    severity: Severity = "error"
    """What every check does when it fires: `error` makes a regression, `warn` only a warning."""
    slices: dict[str, SliceThresholds] = {}
    """Per-slice thresholds, keyed `form=match` or `hard_class=near-duplicate`."""
    power: PowerOptions | None = None  # None (defaults): from lint:, see the docstring
    """Not written here: copied from `lint:` (alpha, power, churn), so the verdict's slice rule and
    `sets lint` share one power figure."""

    @model_validator(mode="before")
    @classmethod
    def _depth_keys(cls, value: Any) -> Any:
        return _depth_keys_into_drops(value)

    @field_validator("slices")
    @classmethod
    def _slice_names(cls, value: dict[str, SliceThresholds]) -> dict[str, SliceThresholds]:
        """A slice is named as lint names it: ``form=<form>`` or ``hard_class=<class>``."""
        forms = [f.value for f in QuestionForm]
        for name in value:
            dimension, _, slice_value = name.partition("=")
            if dimension not in _SLICE_DIMENSIONS or not slice_value:
                raise ValueError(
                    f"{shorten(name)!r} is not a slice; name one as "
                    "'form=match' or 'hard_class=near-duplicate'"
                )
            if dimension == "form" and slice_value not in forms:
                raise ValueError(
                    f"{shorten(name)!r}: no such form; the forms are {', '.join(forms)}"
                )
        return value

    def max_drop(self, depth: int, scope: str = "overall") -> float:
        """The largest allowed drop at ``depth`` in ``scope`` (``overall``, or a slice such as
        ``form=match``): the slice's own ``max_topK_drop``, else the depth's, else ten points."""
        own = self.slices.get(scope)
        if own is not None and own.max_drop(depth) is not None:
            return float(own.max_drop(depth))  # type: ignore[arg-type]
        if depth == 1:
            return self.max_top1_drop
        if depth == 3:
            return self.max_top3_drop
        return self.max_drops.get(depth, MAX_DROP)

    def severity_of(self, scope: str = "overall") -> Severity:
        """What a check in ``scope`` does when it fires: the slice's own severity, else
        ``severity``."""
        own = self.slices.get(scope)
        return own.severity if own is not None and own.severity else self.severity

    def power_options(self) -> PowerOptions:
        """The power settings the slice rule uses: the config's ``lint:`` ones, else defaults."""
        return self.power or PowerOptions()

    def depths_named(self) -> list[int]:
        """The depths other than 1 and 3 that have their own ``max_topK_drop``."""
        return sorted(self.max_drops)


class RunOptions(BaseModel):
    """How a run asks and judges. ``depths``: the gated depths (top-1 and top-3 unless set), each
    with its own threshold (``max_topK_drop``), interval, slice rates, flips and McNemar; the
    retriever is asked for the deepest depth or cutoff times ``overfetch_multiplier``."""

    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    cutoffs: list[int] = Field(default_factory=lambda: [1, 3])
    """The cutoffs k of the secondary metrics (recall, MRR, nDCG at k); the deepest one sets how
    many ids the retriever is asked for."""
    depths: list[int] = Field(default_factory=lambda: [1, 3])
    """The gated depths: each has its threshold, interval, slice rates, flips and McNemar test."""
    overfetch_multiplier: int = Field(default=4, ge=1)
    """The retriever is asked for the deepest depth or cutoff times this, so collapsing chunks to
    documents still fills the ranking."""
    timeout_s: float | None = Field(default=30.0, gt=0)
    """Each retriever call's deadline in seconds; a slower call counts as an error. Unset (null):
    none."""
    max_error_rate: float = Field(default=0.0, ge=0, le=1)
    """The share of questions that may fail (error or timeout) before the run is invalid (exit 3).
"""
    max_concurrency: int | None = Field(default=None, ge=1)
    """How many questions are asked at once; unset: the retriever's own `max_concurrency`."""
    relevance_level: int = Field(default=1, ge=1, le=3)
    """With graded labels, the grade a document needs to be a target (hit rates, recall, MRR)."""

    @field_validator("cutoffs")
    @classmethod
    def _positive(cls, value: list[int]) -> list[int]:
        if not value or any(k < 1 for k in value):
            raise ValueError("cutoffs must be a non-empty list of positive integers")
        return sorted(set(value))

    @field_validator("depths")
    @classmethod
    def _depths(cls, value: list[int]) -> list[int]:
        from retrieval_eval.evaluation.results import checked_depths

        return checked_depths(value)

    def settings(self) -> "RunSettings":
        """These options as the run's settings: each field carries over by its name (``top_k``,
        which is not an option, keeps its default)."""
        from retrieval_eval.evaluation.results import RunSettings

        return RunSettings.model_validate(self, from_attributes=True)


class LintOptions(PowerOptions):
    """``sets lint`` and the DAG's optional lint before retrieval (:mod:`retrieval_eval.lint`).

    ``lint: warn`` is shorthand for ``lint: {mode: warn}``. ``mode``: ``off`` skips it in the DAG,
    ``warn`` records and alerts findings, ``fail`` also fails the run on error findings. The
    thresholds' reasons are in the lint modules' docstrings.
    """

    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    mode: Literal["off", "warn", "fail"] = "warn"
    """`off` skips the DAG's lint (its first task lints before retrieval), `warn` records and
    alerts findings, `fail` also fails the run on error findings."""
    # form honesty: share of a question's stemmed content words found in its best target's text
    match_min_overlap: float = Field(default=0.2, ge=0, le=1)
    """A `match` question shares at least this share of its stemmed content words with its best
    target's text."""
    gap_max_overlap: float = Field(default=0.6, ge=0, le=1)
    """A `gap` question shares at most this share of its stemmed content words with its best
    target's text."""
    # near duplicates: Jaccard of character 3-grams (questions), of word 3-shingles (documents)
    question_similarity: float = Field(default=0.8, gt=0, le=1)
    """Questions at least this alike (Jaccard of character 3-grams) are near-duplicates."""
    document_similarity: float = Field(default=0.8, gt=0, le=1)
    """Documents at least this alike (Jaccard of word 3-shingles) are near-duplicates: candidate
    labels."""
    # power: alpha, power and churn (PowerOptions)

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        return {"mode": value} if isinstance(value, (str, bool)) else value

    @field_validator("mode", mode="before")
    @classmethod
    def _yaml_off(cls, value: Any) -> Any:
        # YAML 1.1 reads a bare `off` as false (and `on` as true)
        return {False: "off", True: "warn"}.get(value, value) if isinstance(value, bool) else value


AlertKind = Literal[
    "regression",
    "invalid_run",
    "labels",
    "drift",
    "invalid_replay",
    "recovered",
    "deadline",
    "calibration",
]


class AlertSpec(BaseModel):
    """An alert channel; ``type`` names a registered sender (``slack``, ``webhook``)."""

    model_config = ConfigDict(use_attribute_docstrings=True, extra="allow")

    type: Literal["slack", "webhook"] = "slack"
    """The sender: `slack` (a Slack webhook connection) or `webhook` (a generic JSON POST)."""
    connection_id: str | None = None
    """The Airflow connection holding the webhook's URL (and, for `webhook`, its bearer token as
    password)."""
    kinds: list[AlertKind] | None = None
    """The alert kinds this channel carries, e.g. `[regression, invalid_run]`; unset: every kind.
    A channel that carries `regression` also carries the `recovered` that closes it."""
    mention: str | None = None
    """Put before every message on this channel, e.g. `<!subteam^S0123ABC>` or `<!here>` (Slack's
    mention syntax) to page an on-call group."""


DeadLabelsBaseline = Literal["refuse", "allow"]


class DagSpec(BaseModel):
    """What every DAG the factory builds is scheduled, owned, alerted and batched by.

    Batches: ``ceil(questions / min_batch_questions)``, between 1 and ``max_batches``.
    """

    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    schedule: str | None = "0 3 * * *"
    """The DAG's cron schedule (or an Airflow preset); null: only manual and asset-triggered runs.
"""
    assets: list[str] = []
    """Asset URIs whose updates (an index rebuild DAG's outlet) trigger a run too."""
    owner: str = "retrieval-eval"
    """The DAG's owner in Airflow."""
    tags: list[str] = []
    """The DAG's tags in Airflow, beside the ones the factory adds."""
    alerts: list[AlertSpec] = []
    """Where a regression or drift is announced (Slack, webhooks)."""
    deadline_s: float | None = Field(default=None, gt=0)
    """Alert (kind `deadline`) when a DAG run has not finished this many seconds after it was
    queued (Airflow's DeadlineAlert: needs the scheduler and the triggerer); unset: no deadline."""
    max_batches: int = Field(default=8, ge=1, le=1024)
    """The most batches (mapped tasks) the questions are split into."""
    min_batch_questions: int = Field(default=25, ge=1)
    """The fewest questions a batch gets: batches = ceil(questions / this), between 1 and
    `max_batches`."""


class ScheduledSpec(DagSpec):
    """A DAG over one retriever (an evaluation's, a replay's)."""

    retriever: str
    """The retriever: a name under `retrievers:`, an entry point or a `module:attribute` path."""


class EvaluationSpec(ScheduledSpec):
    """One (set, retriever) pair: one DAG in Airflow, one ``run`` on the CLI.

    Gates for scheduled and asset runs: ``fail_on_regression`` and ``fail_on_dead_labels`` end
    the DAG run failed after its alert (the manual-run Param ``fail_on_regression`` does too).
    ``dead_labels_baseline`` (None: the config's): ``refuse`` stores and alerts a run whose
    index lost labelled documents but never makes it the baseline; ``allow`` lets it be one.
    ``approve_baseline`` (the DAG only): a run under changed labels does not become the baseline
    by itself, and it or a regression is accepted only when someone approves it in Airflow
    within ``approval_timeout_s`` (no answer leaves the baseline as it is).
    """

    set: str
    """The golden set: a registered identifier or a set file."""
    thresholds: Thresholds | None = None
    """This evaluation's thresholds; unset: the config's `thresholds`."""
    run: RunOptions | None = None
    """This evaluation's run options; unset: the config's `run`."""
    fail_on_regression: bool = False
    """A regression ends the scheduled or asset-triggered DAG run failed, after its alert."""
    fail_on_dead_labels: bool = False
    """Labelled documents missing from the index end the DAG run failed, after its alert."""
    dead_labels_baseline: DeadLabelsBaseline | None = None
    """`refuse`: a run whose index lost labelled documents never becomes the baseline; `allow`: it
    may. Unset: the config's."""
    approve_baseline: bool = False
    """(The DAG only.) A run under changed labels, or a regression, becomes the baseline only when
    someone approves it in Airflow."""
    # how long the approval request waits: a working day after a 03:00 run (in the approval
    # DAG's run: the evaluation's DAG runs do not wait for the answer)
    approval_timeout_s: float = Field(default=12 * 3600.0, gt=0)
    """How long the approval request waits, in seconds; no answer leaves the baseline as it is."""


class ReplayOptions(BaseModel):
    """How a replay asks and compares: depth kept, RBO persistence, call bounds."""

    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    k: int = Field(default=10, ge=1, le=1000)
    """How many ids of each ranking are kept and compared."""
    p: float = Field(default=0.9, gt=0, lt=1)
    """RBO's persistence: the weight of rank r is proportional to p to the power r - 1."""
    timeout_s: float | None = Field(default=30.0, gt=0)
    """Each retriever call's deadline in seconds; unset (null): none."""
    max_concurrency: int | None = Field(default=None, ge=1)
    """How many queries are asked at once; unset: the retriever's own `max_concurrency`."""


class ReplaySpec(ScheduledSpec):
    """One (sample, retriever) replay series: one DAG in Airflow, one ``replay`` on the CLI."""

    sample: str
    """The query sample: a name under `samples:`."""
    against: str | None = None  # another retriever; None: the previous replay of this one
    """Another retriever to compare with; unset: the previous replay of this one."""
    schedule: str | None = "0 4 * * *"
    """The DAG's cron schedule; null: only manual and asset-triggered replays."""
    drift: DriftThresholds | None = None
    """This replay's drift limits; unset: the config's `drift`."""
    replay: ReplayOptions | None = None
    """This replay's options; unset: the config's `replay`."""
    fail_on_drift: bool = False
    """Drift beyond the limits ends the DAG run failed, after its alert."""


class LabellingSpec(DagSpec):
    """One set's labelling: one DAG in Airflow (pool → judge → calibrate → approval → promote →
    rejudge), the CLI's ``sets pool``, ``sets judge auto``, ``sets judge calibrate`` and
    ``sets promote`` in a row. Its ``alerts`` carry the kind `calibration`: the judge fell
    below its min_kappa, so nothing was promoted. ``max_batches`` bounds the pool's and the
    judge's mapped batches (``min_batch_questions`` is not read)."""

    set: str
    """The golden set: a registered identifier or a set file (its file gets the new version)."""
    judge: str
    """The model judge: a name under `judges:`."""
    retrievers: list[str] = Field(min_length=1)
    """The retrievers whose rankings are pooled (their latest stored runs, or runs made now with
    `fresh`); those offering document texts also give the texts the judge reads."""
    depth: int = Field(default=10, ge=1, le=1000)
    """How deep each retriever's ranking is pooled."""
    fresh: bool = False
    """Pool runs made now (not saved) instead of the retrievers' latest stored runs."""
    schedule: str | None = "0 5 * * 1"
    """The DAG's cron schedule (default: Mondays 05:00 UTC); null: only manual runs."""
    max_pairs: int | None = Field(default=None, ge=1)
    """The most pairs the judge is asked about in one DAG run; unset: every pooled pair."""
    min_kappa: float | None = Field(default=None, ge=-1, le=1)
    """The κ the judge must reach against people on this set; unset: the judge's own
    `min_kappa`."""
    calibration_pairs: int = Field(default=500, ge=1)
    """The most people-graded pairs the calibration samples."""
    approval: bool = True
    """Ask a person in Airflow (Browse → Required Actions) before the judged labels are promoted;
    false: promote as soon as the calibration passes."""
    approval_timeout_s: float = Field(default=24 * 3600.0, gt=0)
    """How long the approval request waits, in seconds; no answer promotes nothing."""


class AirflowOptions(BaseModel):
    """How the DAG factory runs evaluations; only the Airflow layer reads these."""

    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    store_connection_id: str | None = None
    """An Airflow connection holding the result store's URL (e.g. a postgres connection); wins over
    `store`."""
    # every task: retries, first delay, its growth factor per retry (1 = constant), the cap
    retries: int = Field(default=3, ge=0)
    """How many times every task is retried."""
    retry_delay_s: float = Field(default=30.0, gt=0)
    """The first retry's delay, in seconds."""
    retry_backoff: float = Field(default=2.0, ge=1)
    """The delay's growth factor per retry (1 = constant)."""
    max_retry_delay_s: float = Field(default=600.0, gt=0)
    """The longest delay between retries, in seconds."""
    task_timeout_s: float = Field(default=3600.0, gt=0)
    """Every task's execution timeout: a try running longer is killed (and retried)."""
    queue: str | None = None
    """The Celery queue every task goes to (workers started with `--queues NAME`); unset: the
    default queue."""
    ui_base_url: str | None = None
    """Where the dashboard is (an absolute http(s) URL): alerts link to
    `{ui_base_url}/runs/{run_id}`."""

    @field_validator("ui_base_url")
    @classmethod
    def _absolute_url(cls, value: str | None) -> str | None:
        """Alerts, task logs and the DAG run's extra link carry this base to wherever they are
        read, so it must be an absolute http(s) URL; checked with every other option, before a
        DAG is built or any retriever imported."""
        if value is None:
            return None
        from urllib.parse import urlsplit

        parts = urlsplit(value)
        if (
            parts.scheme not in ("http", "https")
            or not parts.netloc
            or parts.query
            or parts.fragment
        ):
            # the value is not echoed: a query may hold a token
            raise ValueError(
                "not an absolute http(s) URL without a query or fragment; give where the "
                "dashboard is, e.g. https://airflow.example.com/retrieval-eval"
            )
        return value.rstrip("/")


def _http_url(value: str) -> str:
    """An absolute http(s) URL without a query or fragment (a query may hold a key: never echoed)."""
    from urllib.parse import urlsplit

    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
        raise ValueError(
            "not an absolute http(s) URL without a query or fragment; give the endpoint's base, "
            "e.g. https://api.openai.com/v1"
        )
    return value.rstrip("/")


class OpenAIJudgeSpec(BaseModel):
    """A model judge behind any OpenAI-compatible chat-completions endpoint (OpenAI, Azure OpenAI,
    vLLM, Ollama, LiteLLM): it grades a (question, document text) pair 0-3 with a prompt."""

    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    type: Literal["openai"]
    """An OpenAI-compatible endpoint."""
    model: str = Field(min_length=1)
    """The model the endpoint serves (part of the judge's identity)."""
    base_url: str = "https://api.openai.com/v1"
    """The endpoint's base URL; `/chat/completions` is appended."""
    api_key_from_env: str | None = None
    """The environment variable holding the API key (sent as a bearer token, never logged)."""
    connection_id: str | None = None
    """An Airflow connection whose password is the API key (its host, when set, the base URL)."""
    prompt: Path | None = None
    """A prompt file with `{query}` and `{passage}` (default: UMBRELA's); its fingerprint is part
    of the judge's identity."""
    temperature: float = Field(default=0.0, ge=0, le=2)
    """The sampling temperature (part of the judge's identity)."""
    max_tokens: int = Field(default=64, ge=1)
    """The most tokens one answer may take."""
    max_concurrency: int = Field(default=4, ge=1, le=64)
    """How many requests are in flight at once."""
    requests_per_minute: float | None = Field(default=None, gt=0)
    """The most requests started per minute; unset: no limit but `max_concurrency`."""
    max_cost_usd: float | None = Field(default=None, gt=0)
    """Stop asking once a run's cost reaches this (what was judged is kept)."""
    input_price_per_1k: float = Field(default=0.0, ge=0)
    """US dollars per 1,000 prompt tokens."""
    output_price_per_1k: float = Field(default=0.0, ge=0)
    """US dollars per 1,000 completion tokens."""
    timeout_s: float = Field(default=60.0, gt=0)
    """One request's timeout, in seconds."""
    deadline_s: float = Field(default=300.0, gt=0)
    """One pair's deadline, retries included: past it the pair is unjudged, with the reason."""
    backoff_s: float = Field(default=1.0, ge=0)
    """The first retry's delay after a 429 or 5xx (doubling after each; `Retry-After` wins)."""
    min_kappa: float = Field(default=0.6, ge=-1, le=1)
    """The quadratic-weighted Cohen's κ against people a stored calibration must reach before
    this judge's grades count as judged."""

    @field_validator("base_url")
    @classmethod
    def _base_url(cls, value: str) -> str:
        return _http_url(value)

    @model_validator(mode="after")
    def _one_key_source(self) -> "OpenAIJudgeSpec":
        if self.api_key_from_env is not None and self.connection_id is not None:
            raise ValueError("give at most one of 'api_key_from_env' or 'connection_id'")
        return self


class PythonJudgeSpec(BaseModel):
    """A judge in the team's own code: ``factory`` returns ``grade(question, document_text) ->
    int`` (0-3): a cross-encoder with thresholds, an in-house model."""

    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    type: Literal["python"]
    """The team's own code."""
    factory: str
    """`module:function`, called with `options`, returning the grading function."""
    options: dict[str, Any] = {}
    """Keyword arguments for the factory (part of the judge's identity)."""
    paths: list[Path] = []
    """Folders put on `sys.path` first; relative to the config's folder."""
    version: str | None = None
    """Your code's version (part of the judge's identity: change it when the grades may change)."""
    max_concurrency: int = Field(default=1, ge=1, le=64)
    """How many pairs are graded at once (threads)."""
    deadline_s: float = Field(default=300.0, gt=0)
    """One pair's deadline: past it the pair is unjudged, with the reason."""
    min_kappa: float = Field(default=0.6, ge=-1, le=1)
    """The quadratic-weighted Cohen's κ against people a stored calibration must reach before
    this judge's grades count as judged."""

    @field_validator("factory")
    @classmethod
    def _import_path(cls, value: str) -> str:
        module, sep, attribute = value.partition(":")
        if not (module and sep and attribute):
            raise ValueError(f"{value!r} is not an import path; use 'package.module:function'")
        return value


JudgeSpec = Annotated[OpenAIJudgeSpec | PythonJudgeSpec, Field(discriminator="type")]


class ReviewOptions(BaseModel):
    """The dashboard's review queue."""

    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    raters_per_pair: int = Field(default=1, ge=1, le=10)
    """How many people, each a different rater, grade a pair before it leaves the review queue
    (2 or more: their agreement is measured, and the pair keeps their merged grade); a model
    judge's grade never counts."""


class Config(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    store: str | None = None
    """The result store's URL (`sqlite:///...` or `postgresql://...`); `--db` and
    `$RETRIEVAL_EVAL_DB` win over it."""
    airflow: AirflowOptions = Field(default_factory=AirflowOptions)
    """How the DAG factory runs evaluations (only the Airflow layer reads these)."""
    sets: list[SetSource] = []
    """The golden set files and folders to register."""
    retrievers: dict[str, dict[str, Any]] = {}
    """Named retrievers: each a `type` (an adapter) and that adapter's options."""
    run: RunOptions = Field(default_factory=RunOptions)
    """How every run asks and judges (each evaluation may override)."""
    thresholds: Thresholds = Field(default_factory=Thresholds)
    """Regression thresholds (each evaluation may override)."""
    lint: LintOptions = Field(default_factory=LintOptions)
    """`sets lint` and the DAG's lint before retrieval, and the power settings the verdict
    shares."""
    dead_labels_baseline: DeadLabelsBaseline = "refuse"
    """May a run whose index lost labelled documents become the baseline: `refuse` or `allow` (per
    evaluation too)."""
    evaluations: list[EvaluationSpec] = []
    """The (set, retriever) pairs to evaluate: one DAG each in Airflow."""
    samples: dict[str, SampleSpec] = {}
    """Named query samples drawn from a query log, for replays."""
    replay: ReplayOptions = Field(default_factory=ReplayOptions)
    """How every replay asks and compares (each replay may override)."""
    drift: DriftThresholds = Field(default_factory=DriftThresholds)
    """The limits every replay must keep (each replay may override)."""
    replays: list[ReplaySpec] = []
    """The (sample, retriever) replay series: one DAG each in Airflow."""
    labelling: list[LabellingSpec] = []
    """Sets labelled by a model judge in Airflow: one DAG each (pool, judge, calibrate, approve,
    promote, rejudge)."""
    judges: dict[str, JudgeSpec] = {}
    """Named model judges that grade pooled pairs (`sets judge auto`), calibrated against people
    (`sets judge calibrate`)."""
    review: ReviewOptions = Field(default_factory=ReviewOptions)
    """The dashboard's review queue: how many people grade each pair."""

    path: Path | None = Field(default=None, exclude=True)
    """Not written in the file: where the config was read from; relative paths resolve against its
    folder."""

    @model_validator(mode="after")
    def _thresholds_of_gated_depths(self) -> "Config":
        """A ``max_topK_drop`` for a depth no run gates on would never be applied: an error
        naming the key and the depths, with the fix."""
        gated = {*self.run.depths, *(d for e in self.evaluations if e.run for d in e.run.depths)}
        problems = _ungated("thresholds", self.thresholds, sorted(gated), "run.depths")
        for i, spec in enumerate(self.evaluations):
            if spec.thresholds is not None:
                own = spec.run.depths if spec.run is not None else self.run.depths
                where = f"evaluations.{i}.run.depths" if spec.run is not None else "run.depths"
                problems += _ungated(f"evaluations.{i}.thresholds", spec.thresholds, own, where)
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @model_validator(mode="after")
    def _power_into_thresholds(self) -> "Config":
        """Every ``thresholds`` section gets the ``lint:`` power settings (alpha, power, churn),
        so the verdict's slice rule and ``sets lint`` compute one power figure; they are set
        under ``lint:`` only, so one written under ``thresholds`` is an error saying so."""
        sections = [("thresholds", self.thresholds)] + [
            (f"evaluations.{i}.thresholds", spec.thresholds)
            for i, spec in enumerate(self.evaluations)
            if spec.thresholds is not None
        ]
        lint = self.lint
        power = PowerOptions(alpha=lint.alpha, power=lint.power, churn=lint.churn)
        given = [where for where, t in sections if t.power is not None and t.power != power]
        if given:
            raise ValueError(
                f"{given[0]}.power: the power settings are lint's; set lint.alpha, lint.power "
                "and lint.churn instead"
            )
        for _, section in sections:
            section.power = power
        return self

    @property
    def base_dir(self) -> Path:
        return self.path.parent if self.path else Path.cwd()

    @property
    def source(self) -> str:
        return str(self.path) if self.path else "<no config file>"

    def resolve(self, path: Path | str) -> Path:
        path = Path(path).expanduser()
        return path if path.is_absolute() else self.base_dir / path

    @cached_property
    def golden_sets(self) -> "GoldenSetRegistry":
        """Every set the config names, plus those installed packages provide."""
        from retrieval_eval.golden.registry import GoldenSetRegistry

        registry = GoldenSetRegistry(missing_config="" if self.path else lookup_note())
        problems: list[str] = []
        for source in self.sets:
            try:
                if source.directory is not None:
                    registry.add_directory(self.resolve(source.directory))
                elif source.path is not None:
                    registry.add_file(self.resolve(source.path), identifier=source.identifier)
            except GoldenSetError as exc:
                problems.extend(exc.problems)
        if problems:
            raise GoldenSetError(problems)
        registry.add_entry_points()
        return registry

    @cached_property
    def retriever_registry(self) -> "RetrieverRegistry":
        from retrieval_eval.retrievers.registry import RetrieverRegistry

        return RetrieverRegistry(
            self.retrievers,
            base_dir=self.base_dir,
            source=self.source,
            missing_config="" if self.path else lookup_note(),
        )

    def evaluation(self, set_identifier: str, retriever: str) -> EvaluationSpec | None:
        for spec in self.evaluations:
            if spec.set == set_identifier and spec.retriever == retriever:
                return spec
        return None

    def replay_spec(self, sample: str, retriever: str) -> ReplaySpec | None:
        for spec in self.replays:
            if spec.sample == sample and spec.retriever == retriever:
                return spec
        return None

    def sample_spec(self, name: str) -> SampleSpec:
        """The ``samples:`` entry called ``name``; unknown is an error naming the known ones."""
        from retrieval_eval.errors import UnknownNameError
        from retrieval_eval.safety.limits import quote
        from retrieval_eval.safety.suggest import did_you_mean

        if name in self.samples:
            return self.samples[name]
        known = list(self.samples)
        where = self.source if self.path else lookup_note()
        raise UnknownNameError(
            f"unknown query sample {quote(name)}{did_you_mean(name, known)}; "
            f"the config's 'samples:' names: {', '.join(known) or 'none'} ({where})"
        )

    def judge_spec(self, name: str) -> OpenAIJudgeSpec | PythonJudgeSpec:
        """The ``judges:`` entry called ``name``; unknown is an error naming the known ones."""
        from retrieval_eval.errors import UnknownNameError
        from retrieval_eval.safety.limits import quote
        from retrieval_eval.safety.suggest import did_you_mean

        if name in self.judges:
            return self.judges[name]
        known = list(self.judges)
        where = self.source if self.path else lookup_note()
        raise UnknownNameError(
            f"unknown judge {quote(name)}{did_you_mean(name, known)}; "
            f"the config's 'judges:' names: {', '.join(known) or 'none'} ({where})"
        )

    def dead_labels_baseline_for(self, set_identifier: str, retriever: str) -> DeadLabelsBaseline:
        """The evaluation's ``dead_labels_baseline``, else the config's."""
        spec = self.evaluation(set_identifier, retriever)
        own = spec.dead_labels_baseline if spec is not None else None
        return own or self.dead_labels_baseline

    def section_for(self, set_identifier: str, retriever: str, name: str) -> Any:
        """The evaluation's own ``run`` or ``thresholds`` section, else the config's."""
        spec = self.evaluation(set_identifier, retriever)
        own = getattr(spec, name) if spec is not None else None
        return own if own is not None else getattr(self, name)


def _ungated(where: str, thresholds: Thresholds, depths: list[int], named: str) -> list[str]:
    """The ``max_topK_drop`` keys (the section's and its slices') of depths not gated."""
    keys = [(where, d) for d in thresholds.max_drops]
    keys += [(f"{where}.slices.{n}", d) for n, s in thresholds.slices.items() for d in s.max_drops]
    return [
        f"{key}.max_top{depth}_drop: depth {depth} is not gated ({named}: {depths}); add "
        f"{depth} to the depths or remove the key"
        for key, depth in keys
        if depth not in depths
    ]


def load_config(path: str | Path | None = None) -> Config:
    """Load and validate a config; errors name the file and the field path."""
    found = find_config(path)
    if found is None:
        return Config()
    if not found.is_file():
        raise ConfigError(f"config file {found} does not exist")
    try:
        refuse_too_large(found, MAX_CONFIG_FILE_BYTES, "a config file", ConfigError)
        text = found.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = "not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else exc.strerror
        raise ConfigError(f"{found}: cannot read the config file: {reason}") from None
    # PyYAML only when there is a config file to read: a command without one never imports it
    import yaml

    from retrieval_eval.safety.yaml_input import describe as describe_yaml_error
    from retrieval_eval.safety.yaml_input import load_config_yaml

    try:
        # libyaml when present: the DAG file reads the config at every parse
        data = load_config_yaml(text) or {}
    except (yaml.YAMLError, RecursionError) as exc:
        raise ConfigError(f"{found}: {describe_yaml_error(exc, column=False)}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{found}: expected a mapping at the top level")
    try:
        config = Config.model_validate(data)
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            # keys come from the file: a message quotes at most ~200 characters of them
            loc = shorten(".".join(str(p) for p in err["loc"]))
            msg = shorten(err["msg"].removeprefix("Value error, "))
            lines.append(f"{found}: {loc}: {msg}" if loc else f"{found}: {msg}")
        raise ConfigError("\n".join(lines)) from None
    return config.model_copy(update={"path": found.resolve()})
