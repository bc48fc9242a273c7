"""Model judges in the store: their judgments, the answers' cache and their calibrations.

- :meth:`Judges.add`: a judge's grades into the ``judgment`` table (channel
  ``judge``, rater ``judge:<name>``, ``written_by`` who ran it) with the audit of each: the judge's
  identity, model, prompt fingerprint, tokens and cost. A pair this identity already has a row
  for on the set is not written twice.
- :func:`cached_answers` / :func:`save_answers`: every answer the judge gave (a grade, or an
  unreadable answer with its reason), keyed by (identity, question text, document text), so a
  second run asks nothing already asked, whatever the set.
- :func:`add_calibration` / :func:`calibrations` / :func:`trusted_identities`: each
  ``sets judge calibrate``; an identity is trusted on a set when its latest calibration there
  passed (what :func:`retrieval_eval.labels.judged.gate` lets count).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import and_, insert, select

from retrieval_eval.labels.judgments import Judgment
from retrieval_eval.store.judgments import judgment_values
from retrieval_eval.store.schema import judge_answer, judge_calibration, judgment

if TYPE_CHECKING:
    from retrieval_eval.store.store import Store

CHANNEL = "judge"


@dataclass(frozen=True, slots=True)
class Audit:
    """What a machine judgment records besides its grade."""

    judge_identity: str
    model: str | None
    prompt_fingerprint: str | None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0


@dataclass(frozen=True, slots=True)
class CachedAnswer:
    """One answer of a judge, as cached."""

    key: str
    judge_identity: str
    grade: int | None
    reason: str | None
    model: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0


class Judges:
    """Model judges in one :class:`~retrieval_eval.store.store.Store`
    (``store.judges``)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def machine_judged(self, set_identifier: str, identity: str) -> set[tuple[str, str]]:
        """The (question key, document id) pairs ``identity`` already has a row for on the set."""
        query = select(judgment.c.question_id, judgment.c.question, judgment.c.document_id).where(
            and_(judgment.c.set_identifier == set_identifier, judgment.c.judge_identity == identity)
        )
        with self.store.transaction() as conn:
            rows = conn.execute(query).all()
        return {(qid if qid is not None else f"text:{text}", doc) for qid, text, doc in rows}

    def add(
        self,
        set_identifier: str,
        rows: Sequence[tuple[Judgment, Audit]],
        *,
        written_by: str,
    ) -> int:
        """Store a judge's rows of a set in ONE transaction, leaving out the pairs its identity
        already has on the set; how many were written."""
        now = datetime.now(UTC)
        seen: dict[str, set[tuple[str, str]]] = {}
        values = []
        for row, audit in rows:
            if audit.judge_identity not in seen:
                seen[audit.judge_identity] = self.machine_judged(
                    set_identifier, audit.judge_identity
                )
            pair = (row.question_key, row.document_id)
            if pair in seen[audit.judge_identity]:
                continue
            seen[audit.judge_identity].add(pair)
            values.append(
                {
                    **judgment_values(set_identifier, row, CHANNEL, written_by, now),
                    "judge_identity": audit.judge_identity,
                    "model": audit.model,
                    "prompt_fingerprint": audit.prompt_fingerprint,
                    "input_tokens": audit.input_tokens,
                    "output_tokens": audit.output_tokens,
                    "cost_usd": audit.cost_usd,
                }
            )
        if values:
            with self.store.transaction() as conn:
                conn.execute(insert(judgment), values)
        return len(values)

    def cached_answers(self, keys: Iterable[str]) -> dict[str, CachedAnswer]:
        """The cached answers of ``keys`` (those never asked are absent)."""
        wanted = sorted(set(keys))
        found: dict[str, CachedAnswer] = {}
        with self.store.transaction() as conn:
            for start in range(0, len(wanted), 500):  # bounded IN lists
                chunk = wanted[start : start + 500]
                rows = conn.execute(select(judge_answer).where(judge_answer.c.key.in_(chunk)))
                for row in rows.mappings():
                    found[row["key"]] = _answer(row)
        return found

    def save_answers(self, answers: Sequence[CachedAnswer]) -> int:
        """Cache ``answers`` in one transaction (a key already cached is kept as it was); how many
        were new."""
        now = datetime.now(UTC)
        with self.store.transaction() as conn:
            keys = [a.key for a in answers]
            have: set[str] = set()
            for start in range(0, len(keys), 500):
                chunk = keys[start : start + 500]
                have.update(
                    conn.execute(
                        select(judge_answer.c.key).where(judge_answer.c.key.in_(chunk))
                    ).scalars()
                )
            new: dict[str, dict[str, Any]] = {}
            for a in answers:
                if a.key in have or a.key in new:
                    continue
                new[a.key] = {
                    "key": a.key,
                    "judge_identity": a.judge_identity,
                    "grade": a.grade,
                    "reason": a.reason,
                    "model": a.model,
                    "input_tokens": a.input_tokens,
                    "output_tokens": a.output_tokens,
                    "cost_usd": a.cost_usd,
                    "answered_at": now,
                }
            if new:
                conn.execute(insert(judge_answer), list(new.values()))
        return len(new)

    def add_calibration(self, values: dict[str, Any]) -> int:
        """Store one calibration (the columns of ``judge_calibration`` but ``id`` and
        ``recorded_at``); its id."""
        row = {**values, "recorded_at": datetime.now(UTC)}
        with self.store.transaction() as conn:
            result = conn.execute(insert(judge_calibration).values(row))
            key = result.inserted_primary_key
        assert key is not None
        return int(key[0])

    def calibrations(
        self, set_identifier: str, judge: str | None = None
    ) -> list[StoredCalibration]:
        """A set's calibrations (of one judge name, if given), oldest first."""
        query = select(judge_calibration).where(
            judge_calibration.c.set_identifier == set_identifier
        )
        if judge is not None:
            query = query.where(judge_calibration.c.judge == judge)
        with self.store.transaction() as conn:
            rows = conn.execute(query.order_by(judge_calibration.c.id)).mappings().all()
        return [_calibration(row) for row in rows]

    def trusted_identities(self, set_identifier: str) -> set[str]:
        """The judge identities whose latest calibration on the set passed."""
        latest: dict[str, bool] = {}
        for c in self.calibrations(set_identifier):
            latest[c.judge_identity] = c.passed  # oldest first: the latest wins
        return {identity for identity, passed in latest.items() if passed}


def _answer(row: Any) -> CachedAnswer:
    return CachedAnswer(
        key=row["key"],
        judge_identity=row["judge_identity"],
        grade=row["grade"],
        reason=row["reason"],
        model=row["model"],
        input_tokens=row["input_tokens"] or 0,
        output_tokens=row["output_tokens"] or 0,
        cost_usd=row["cost_usd"] or 0.0,
    )


@dataclass(frozen=True, slots=True)
class StoredCalibration:
    """One ``sets judge calibrate`` as stored."""

    id: int
    set_identifier: str
    judge: str
    judge_identity: str
    model: str | None
    prompt_fingerprint: str | None
    pairs: int
    seed: int
    kappa: float | None
    kappa_low: float | None
    kappa_high: float | None
    tau: float | None
    min_kappa: float
    passed: bool
    figures: dict[str, Any]
    written_by: str
    recorded_at: datetime


def _calibration(row: Any) -> StoredCalibration:
    values = dict(row)
    recorded = values["recorded_at"]
    if recorded.tzinfo is None:  # SQLite: naive
        recorded = recorded.replace(tzinfo=UTC)
    values["recorded_at"] = recorded
    values["passed"] = bool(values["passed"])
    values["figures"] = dict(values["figures"] or {})
    return StoredCalibration(**values)
