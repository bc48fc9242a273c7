"""Alert markers in the store (``store.alerts``): who may send a run's alert on a channel.

A claim is a row in ``eval_alert`` whose unique (run key, channel) lets exactly one caller win,
across retries, re-runs of cleared tasks and racing processes: ``sending`` until delivered
(:meth:`Alerts.sent`) or released when sending failed (:meth:`Alerts.release`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from sqlalchemy import delete, insert, select, update
from sqlalchemy.exc import IntegrityError

from retrieval_eval.store.schema import GRADER, eval_alert, eval_result

if TYPE_CHECKING:
    from retrieval_eval.store.store import Store


class Alerts:
    """The alert markers of one :class:`~retrieval_eval.store.store.Store` (``store.alerts``)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def claim(
        self, run_key: str, channel: str, kind: str, *, expire_after_s: float | None = None
    ) -> bool:
        """Claim the right to send ``run_key``'s alert through ``channel``; False if taken.

        Follow a won claim with :meth:`sent` once delivered, or :meth:`release` when sending
        failed, so a retry may try again. With ``expire_after_s``, a claim still ``sending``
        that much later (its sender was killed mid-send) is taken over, by one caller only; a
        ``sent`` one never is.
        """
        now = datetime.now(UTC)
        row = {"run_key": run_key, "channel": channel, "kind": kind, "state": "sending"}
        with self.store.transaction() as conn:
            try:
                with conn.begin_nested():
                    conn.execute(insert(eval_alert).values(**row, updated_at=now))
                return True
            except IntegrityError:
                if expire_after_s is None:
                    return False
            taken = conn.execute(
                update(eval_alert)
                .where(
                    eval_alert.c.run_key == run_key,
                    eval_alert.c.channel == channel,
                    eval_alert.c.state == "sending",
                    eval_alert.c.updated_at < now - timedelta(seconds=expire_after_s),
                )
                .values(kind=kind, updated_at=now)
            )
            return taken.rowcount == 1

    def sent(self, run_key: str, channel: str) -> None:
        """Mark a claimed alert delivered."""
        with self.store.transaction() as conn:
            conn.execute(
                update(eval_alert)
                .where(eval_alert.c.run_key == run_key, eval_alert.c.channel == channel)
                .values(state="sent", updated_at=datetime.now(UTC))
            )

    def release(self, run_key: str, channel: str) -> None:
        """Drop a claim whose message was not delivered (the next attempt may send it)."""
        with self.store.transaction() as conn:
            conn.execute(
                delete(eval_alert).where(
                    eval_alert.c.run_key == run_key, eval_alert.c.channel == channel
                )
            )

    def state(self, run_key: str, channel: str) -> str | None:
        """``sending``, ``sent`` or None (never claimed) for a run's alert on a channel."""
        with self.store.transaction() as conn:
            state = conn.execute(
                select(eval_alert.c.state).where(
                    eval_alert.c.run_key == run_key, eval_alert.c.channel == channel
                )
            ).scalar()
        return None if state is None else str(state)

    def last_kind(
        self,
        set_identifier: str,
        retriever: str,
        channel: str,
        kinds: Sequence[str],
        *,
        before_run_key: str,
    ) -> str | None:
        """The kind (one of ``kinds``) of the last alert ``sent`` on ``channel`` for a stored run
        of the set and retriever older than the run ``before_run_key`` (all, if that run is not
        stored); None if there is none. Alerts follow their runs: a later run has a larger id."""
        pair = (
            eval_result.c.grader == GRADER,
            eval_result.c.set_identifier == set_identifier,
            eval_result.c.model_id == retriever,
        )
        with self.store.transaction() as conn:
            current = conn.execute(
                select(eval_result.c.id).where(eval_result.c.run_key == before_run_key)
            ).scalar()
            query = (
                select(eval_alert.c.kind)
                .join(eval_result, eval_result.c.run_key == eval_alert.c.run_key)
                .where(
                    *pair,
                    eval_alert.c.channel == channel,
                    eval_alert.c.state == "sent",
                    eval_alert.c.kind.in_(list(kinds)),
                    eval_alert.c.run_key != before_run_key,
                )
                .order_by(eval_result.c.id.desc())
                .limit(1)
            )
            if current is not None:
                query = query.where(eval_result.c.id < current)
            kind = conn.execute(query).scalar()
        return None if kind is None else str(kind)
