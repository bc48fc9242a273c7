"""What an alert says, independent of the channel that carries it.

Every line of it goes through :func:`retrieval_eval.safety.redaction.redact`, and the senders register
their channel's secrets (webhook paths, bearer tokens) before they send.

Kinds: ``regression``, ``invalid_run``, ``recovered`` (the verdict's alerts, at most one per run
and channel; ``recovered`` is a passing run after an alerted regression, read as a regression's
figures are), ``deadline`` (a DAG run not finished in time: its summary names the run) and
``labels`` (expected ids no longer in the index, :mod:`retrieval_eval.evaluation.labels`): its own
title and lines, "labels need attention: N ids no longer in the index", the stale questions left
out of the verdict and the lint task's counts, and never a regression's rates; ``calibration``
(a labelling DAG's model judge below its min_kappa: ``retriever`` is ``judge:<name>``, the
summary its κ, interval and min_kappa, nothing promoted).

A regression's before → after are the verdict's rates over the questions it compared
(``top1_baseline``/``top1_current``, as the CLI headline and ``runs report`` print them), so
both sides cover the same questions. When stale-label questions were left out, those are fewer
than the run's: the line says "on the N questions compared" and adds the run's overall rate
(``Top-1: 64.3% → 50.0% on the 42 questions compared (this run: 45.7% over all 46)``); the
webhook's JSON carries the same as ``top1_before``/``top1_after``, ``compared_questions`` and
``top1_overall``. Every gated depth has its line (``Top-5: 80.0% → 50.0%``; the webhook's
``depths``, ``before_at``, ``after_at``, ``overall_at``), and each one beyond the shallowest that
regressed names the questions now missed there. The figures are the run's
:class:`~retrieval_eval.store.summary.RunSummary`, the one history and the dashboard read.

A regression's first line says what regressed (the verdict's ``reasons``: ``Regressed: 1 slice
regression (form=match top1 -20.8 pts)``), so an alert whose overall rates rose does not read as
a rise; the ``warn`` checks that fired follow as ``Warned (not a regression): ...`` (webhook:
``reasons``, ``warnings``, ``slice_warnings``, ``slices_too_small``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from retrieval_eval.evaluation.labels import source_text
from retrieval_eval.formats.numbers import pct, pts
from retrieval_eval.reports.links import replay_page_url, run_page_url
from retrieval_eval.reports.verdict import regression_reasons, verdict_summary, warning_reasons
from retrieval_eval.safety.redaction import redact, register_header, register_url, register_webhook
from retrieval_eval.store.summary import RunSummary

if TYPE_CHECKING:
    from retrieval_eval.evaluation.results import RunResult
    from retrieval_eval.replay.record import ReplayRecord
    from retrieval_eval.workflows.recording import Recorded

MAX_FLIPS_SHOWN = 5


class AlertMessage(BaseModel):
    """A channel-neutral alert of one kind (the module's docstring lists them); ``mention`` is
    the channel's, put first."""

    kind: str
    set_identifier: str
    retriever: str
    run_id: int | None = None
    baseline_run_id: int | None = None
    top1_before: float | None = None
    top1_after: float | None = None
    top3_before: float | None = None
    top3_after: float | None = None
    # set when stale questions were left out: before/after cover only these many questions,
    # and the run's own rates over all ``question_count`` are the *_overall ones
    compared_questions: int | None = None
    top1_overall: float | None = None
    top3_overall: float | None = None
    # every gated depth (top-1 and top-3 by default, as the fields above): before → after, and
    # the run's own rate when stale questions were left out
    depths: list[int] = Field(default_factory=lambda: [1, 3])
    before_at: dict[int, float | None] = Field(default_factory=dict)
    after_at: dict[int, float | None] = Field(default_factory=dict)
    overall_at: dict[int, float | None] = Field(default_factory=dict)
    error_count: int = 0
    question_count: int = 0
    slice_regressions: list[dict[str, Any]] = Field(default_factory=list)
    # what regressed and the warn checks that fired, one phrase each (the verdict's); the
    # slices that only warned and those too small to judge
    reasons: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    slice_warnings: list[dict[str, Any]] = Field(default_factory=list)
    slices_too_small: list[dict[str, Any]] = Field(default_factory=list)
    flipped_to_miss: list[str] = Field(default_factory=list)
    # the questions now missed at each other gated depth whose drop regressed
    flipped_to_miss_at: dict[int, list[str]] = Field(default_factory=dict)
    summary: str = ""
    link: str | None = None
    # kind "labels"
    dead_ids: list[str] = Field(default_factory=list)
    stale_questions: list[str] = Field(default_factory=list)
    partly_dead: int = 0
    labels_source: str = ""
    lint_errors: int | None = None
    lint_warnings: int | None = None
    # kinds "drift" and "invalid_replay": set_identifier is the sample, summary the headline
    drift_reasons: list[str] = Field(default_factory=list)
    # the index build this run measured and the one its baseline measured (None: not recorded);
    # a compared verdict's summary names both ("index A vs B")
    index_version: str | None = None
    baseline_index_version: str | None = None
    mention: str | None = None

    @property
    def title(self) -> str:
        if self.kind == "recovered":
            return f"Retrieval recovered: {self.set_identifier} × {self.retriever}"
        if self.kind == "deadline":
            return f"Retrieval eval not finished in time: {self.set_identifier} × {self.retriever}"
        if self.kind == "drift":
            return f"Ranking drift: sample {self.set_identifier} × {self.retriever}"
        if self.kind == "invalid_replay":
            return f"Replay could not be trusted: sample {self.set_identifier} × {self.retriever}"
        if self.kind == "labels":
            return f"Retrieval eval labels need attention: {self.set_identifier} × {self.retriever}"
        if self.kind == "calibration":
            return f"Model judge failed calibration: {self.set_identifier} × {self.retriever}"
        if self.kind == "invalid_run":
            return f"Retrieval eval could not be trusted: {self.set_identifier} × {self.retriever}"
        return f"Retrieval regression: {self.set_identifier} × {self.retriever}"

    def _label_lines(self) -> list[str]:
        n, stale = len(self.dead_ids), self.stale_questions
        lines = [
            f"Labels need attention: {n} id{'s' if n != 1 else ''} no longer in the index "
            f"({self.labels_source}): {_shown(self.dead_ids)}",
            f"{len(stale)} question{'s' if len(stale) != 1 else ''} with no target left (stale "
            f"labels, left out of the regression verdict): {_shown(stale)}",
        ]
        if self.partly_dead:
            lines.append(f"{self.partly_dead} more lost some of their targets (still judged)")
        if self.lint_errors is not None:
            lines.append(f"Lint: {self.lint_errors} errors, {self.lint_warnings or 0} warnings")
        lines.append("Fix the golden set's labels or restore the documents; not a regression.")
        return lines

    def lines(self) -> list[str]:
        """The message's body, the channel's mention first."""
        mention = [redact(self.mention)] if self.mention else []
        return mention + self._body()

    def _body(self) -> list[str]:
        if self.kind in ("drift", "invalid_replay", "deadline", "calibration"):
            lines = [*self.summary.splitlines(), *(f"- {r}" for r in self.drift_reasons)]
            if self.run_id is not None:
                lines.append(f"Replay {self.run_id}" + (f": {self.link}" if self.link else ""))
            return [redact(line) for line in lines]
        if self.kind == "labels":
            lines = self._label_lines()
        elif self.kind == "invalid_run":
            lines = [
                f"{self.error_count} of {self.question_count} questions failed to retrieve; "
                "the run is invalid and was not compared with its baseline.",
            ]
        else:
            lines = [f"Regressed: {'; '.join(self.reasons)}"] if self.reasons else []
            if self.kind == "recovered":
                lines = ["Recovered: no regression, after the regression alerted earlier."]
            if self.warnings:
                lines.append(f"Warned (not a regression): {'; '.join(self.warnings)}")
            lines += [
                self._rate_line(
                    f"Top-{d}", *self._before_after(d), self.overall_at.get(d, self._seed(d))
                )
                for d in self.depths
            ]
            for s in self.slice_regressions:
                lines.append(
                    f"Slice {s.get('dimension')}={s.get('value')} {s.get('metric')}: "
                    f"{pct(s.get('baseline'))} → {pct(s.get('current'))} ({pts(s.get('delta'))})"
                )
            missed = {1: self.flipped_to_miss, **self.flipped_to_miss_at}
            for depth, ids in missed.items():
                if ids:
                    lines.append(f"Now missed at top-{depth}: {_shown(ids)}")
        if self.summary and self.kind != "labels":
            lines.append(self.summary)
        if self.run_id is not None:
            ref = f"Run {self.run_id}"
            if self.baseline_run_id is not None:
                ref += f" (baseline run {self.baseline_run_id})"
            lines.append(ref + (f": {self.link}" if self.link else ""))
        return [redact(line) for line in lines]

    def _before_after(self, depth: int) -> tuple[float | None, float | None]:
        if depth in self.after_at:
            return self.before_at.get(depth), self.after_at[depth]
        return getattr(self, f"top{depth}_before", None), getattr(self, f"top{depth}_after", None)

    def _seed(self, depth: int) -> float | None:
        return getattr(self, f"top{depth}_overall", None)

    def _rate_line(
        self, label: str, before: float | None, after: float | None, overall: float | None
    ) -> str:
        line = f"{label}: {pct(before)} → {pct(after)}"
        n = self.compared_questions
        if n is None:
            return line
        return (
            f"{line} on the {n} question{'s' if n != 1 else ''} compared "
            f"(this run: {pct(overall)} over all {self.question_count})"
        )

    def text(self) -> str:
        return "\n".join([self.title, *self.lines()])


def _shown(ids: list[str]) -> str:
    more = len(ids) - MAX_FLIPS_SHOWN
    return (", ".join(ids[:MAX_FLIPS_SHOWN]) or "none") + (f" (+{more} more)" if more > 0 else "")


def build_message(
    kind: str, result: RunResult, recorded: Recorded, ui_base_url: str | None = None
) -> AlertMessage:
    """Build the message of a run just judged: its figures from the :class:`RunSummary` the
    store will read back, its lists (flips, slices, dead ids) from the verdict."""
    verdict, run_id = recorded.verdict, recorded.run_id
    summary = RunSummary.recorded(result, verdict, run_id)
    compared = summary.compared_questions
    before1, after1 = summary.before_after("top1")
    before3, after3 = summary.before_after("top3")
    at = {depth: summary.before_after(f"top{depth}") for depth in summary.depths}
    changes = verdict.changes()
    first = next(iter(changes), 1)
    link = run_page_url(ui_base_url, run_id)
    labels, lint = result.dead_labels, result.lint or {}
    return AlertMessage(
        kind=kind,
        set_identifier=summary.set,
        retriever=summary.retriever,
        run_id=run_id,
        baseline_run_id=verdict.baseline_run_id,
        top1_before=before1,
        top1_after=after1,
        top3_before=before3,
        top3_after=after3,
        compared_questions=compared,
        top1_overall=None if compared is None else summary.top1_hit_rate,
        top3_overall=None if compared is None else summary.top3_hit_rate,
        depths=summary.depths,
        before_at={d: before for d, (before, _) in at.items()},
        after_at={d: after for d, (_, after) in at.items()},
        overall_at={} if compared is None else {d: summary.hit_rate(d) for d in at},
        error_count=summary.error_count,
        question_count=summary.question_count,
        slice_regressions=[s.model_dump(mode="json") for s in verdict.slice_regressions],
        reasons=[redact(r) for r in regression_reasons(verdict)],
        warnings=[redact(w) for w in warning_reasons(verdict)],
        slice_warnings=[s.model_dump(mode="json") for s in verdict.slice_warnings],
        slices_too_small=[s.model_dump(mode="json") for s in verdict.slices_too_small],
        flipped_to_miss=list(verdict.flipped_to_miss),
        flipped_to_miss_at={
            d: list(c.flipped_to_miss)
            for d, c in changes.items()
            if d not in (1, first) and c.dropped and c.flipped_to_miss
        },
        summary=redact(verdict_summary(verdict)),
        link=link,
        dead_ids=list(verdict.dead_ids or (labels.dead_ids if labels else [])),
        stale_questions=list(verdict.stale_questions or (labels.stale_questions if labels else [])),
        partly_dead=len(labels.partly_dead) if labels else 0,
        labels_source=source_text(labels.source) if labels else "",
        lint_errors=lint.get("errors"),
        lint_warnings=lint.get("warnings"),
        index_version=summary.index_version,
        baseline_index_version=verdict.baseline_index_version,
    )


def replay_message(kind: str, saved: ReplayRecord, ui_base_url: str | None = None) -> AlertMessage:
    """Build the message of a replay just compared (``drift``, ``invalid_replay``): its headline,
    the verdict's reasons beside why queries failed (masked), its page and both index builds."""
    from retrieval_eval.reports.replay import headline, reason_lines

    comparison = saved.comparison
    return AlertMessage(
        kind=kind,
        set_identifier=saved.sample_name,
        retriever=saved.retriever,
        run_id=saved.replay_id,
        summary=headline(saved),
        drift_reasons=[*comparison.reasons, *reason_lines(comparison.error_reasons())],
        link=replay_page_url(ui_base_url, saved.replay_id),
        question_count=len(saved.rankings),
        error_count=comparison.errors,
        index_version=saved.index_version,
        baseline_index_version=saved.compared_index_version,
    )


def redacted(value: Any) -> Any:
    """A JSON-able value with every string in it redacted (a channel's payload)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [redacted(item) for item in value]
    if isinstance(value, dict):
        return {key: redacted(item) for key, item in value.items()}
    return value


def register_webhook_connection(connection: Any) -> None:
    """Register an alert connection's secrets: its password (a webhook path such as Slack's
    ``T000/B000/xxx``, or a bearer token, also as ``Bearer <token>``) and its host URL's
    password and secret query values."""
    password = getattr(connection, "password", None)
    register_webhook(password)
    if password:
        register_header(f"Bearer {password}")
    register_url(getattr(connection, "host", None))


def register_connection_secrets(connection_id: str) -> None:
    """:func:`register_webhook_connection` for a connection read by id; a connection that cannot
    be read is left to the sender, which fails naming only its id."""
    try:
        from airflow.sdk import BaseHook

        connection = BaseHook.get_connection(connection_id)
    except Exception:
        return
    register_webhook_connection(connection)
