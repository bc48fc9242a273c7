"""Relevance judgments in the store: added in one transaction, read back as judgments-file rows.

Two channels write them: ``sets judge import`` (``channel="import"``, ``written_by`` the OS user
who imported the file) and the dashboard's review queue (``channel="dashboard"``, rater and
writer the signed-in Airflow user). A model judge's rows come through
:mod:`retrieval_eval.store.judges` (``channel="judge"``) and are read back only once calibrated
(``gated``). Every row keeps who wrote it and when (``recorded_at``, the store's clock;
``judged_at`` is the file's own ``time`` column). A row without a grade is a skip:
the dashboard records skips so a rater's queue hides what they passed over, while the candidate
stays open for everyone else. Rows are read back oldest first, so a rater's later grade of a
pair wins in :func:`retrieval_eval.labels.judgments.summarise`. Judgments are labels, not runs:
``Store.prune`` never deletes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import insert, select

from retrieval_eval.labels.judgments import Judgment
from retrieval_eval.store.schema import judgment

if TYPE_CHECKING:
    from retrieval_eval.store.store import Store

CHANNELS = ("import", "dashboard")  # people's; a model judge's rows: store/judges.py, "judge"


@dataclass(frozen=True, slots=True)
class StoredJudgment:
    """A stored row: the judgment as a judgments file gives it, and who stored it when."""

    id: int
    set_identifier: str
    judgment: Judgment
    channel: str
    written_by: str
    recorded_at: datetime
    judge_identity: str | None = None  # a model judge's row: the judge's identity


class Judgments:
    """The relevance judgments in one :class:`~retrieval_eval.store.store.Store`
    (``store.judgments``)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def add(
        self,
        set_identifier: str,
        rows: Sequence[Judgment],
        *,
        channel: str,
        written_by: str,
    ) -> int:
        """Store ``rows`` of set ``set_identifier`` in ONE transaction (all or none); how many."""
        if channel not in CHANNELS:
            raise ValueError(f"channel must be one of {CHANNELS}, got {channel!r}")
        now = datetime.now(UTC)
        values = [judgment_values(set_identifier, row, channel, written_by, now) for row in rows]
        if values:
            with self.store.transaction() as conn:
                conn.execute(insert(judgment), values)
        return len(values)

    def stored(self, set_identifier: str) -> list[StoredJudgment]:
        """Every stored row of a set, skips included, oldest first."""
        query = (
            select(judgment)
            .where(judgment.c.set_identifier == set_identifier)
            .order_by(judgment.c.id)
        )
        with self.store.transaction() as conn:
            rows = conn.execute(query).mappings().all()
        return [_stored(row) for row in rows]

    def read(
        self, set_identifier: str, *, skips: bool = False, gated: bool = True
    ) -> list[Judgment]:
        """A set's stored judgments as judgments-file rows (what ``sets promote`` takes), oldest
        first; ``skips`` keeps the rows without a grade. ``gated``: a model judge's rows only
        when its stored calibration passed (:func:`retrieval_eval.labels.judged.gate`)."""
        from retrieval_eval.labels.judged import gate

        stored = [s for s in self.stored(set_identifier) if skips or s.judgment.grade is not None]
        if not gated:
            return [s.judgment for s in stored]
        trusted = self.store.judges.trusted_identities(set_identifier)
        return gate(((s.judgment, s.judge_identity) for s in stored), trusted)


def _stored(row: Any) -> StoredJudgment:
    values = dict(row)
    recorded = _aware(values["recorded_at"])
    judged = values["judged_at"]
    return StoredJudgment(
        id=int(values["id"]),
        set_identifier=str(values["set_identifier"]),
        judgment=Judgment(
            question_id=values["question_id"],
            question=values["question"],
            document_id=values["document_id"],
            grade=values["grade"],
            rater=values["rater"],
            time=None if judged is None else _aware(judged),
            note=values["note"],
            source=values["source"],
        ),
        channel=str(values["channel"]),
        written_by=str(values["written_by"]),
        recorded_at=recorded,
        judge_identity=values.get("judge_identity"),
    )


def _aware(value: object) -> datetime:
    assert isinstance(value, datetime)
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)  # SQLite: naive


def judgment_values(
    set_identifier: str, row: Judgment, channel: str, written_by: str, now: datetime
) -> dict[str, Any]:
    """One judgment row's columns, as every writer of the judgment table stores them."""
    return {
        "set_identifier": set_identifier,
        "question_id": row.question_id,
        "question": row.question if row.question_id is None else None,
        "document_id": row.document_id,
        "grade": row.grade,
        "rater": row.rater,
        "judged_at": row.time,
        "note": row.note,
        "source": row.source,
        "channel": channel,
        "written_by": written_by,
        "recorded_at": now,
    }
