"""Revision 0010_replay_rows: replay_ranking without key or foreign key, ids as JSON. Rankings
stored before it and after it survive the upgrade and the downgrade, in order, on each backend."""

from __future__ import annotations

from datetime import UTC, datetime

from alembic import command
from sqlalchemy import inspect, text

from retrieval_eval.store import Store, open_store
from retrieval_eval.store.migrate import HEAD, alembic_config
from store.test_replays import SAMPLE, ranked, record


def _ids_as_stored(store: Store) -> list[list[str]]:
    """Each ranking's ids as the old shape keeps them (an array on PostgreSQL, JSON text on
    SQLite), in the order of the serial ids the downgrade gave back."""
    import json

    with store.engine.connect() as conn:
        values = conn.execute(text("SELECT ids FROM replay_ranking ORDER BY id")).scalars()
        return [v if isinstance(v, list) else json.loads(v) for v in values]


def test_rankings_survive_the_downgrade_and_the_upgrade(store_url: str) -> None:
    with open_store(store_url) as store:
        sample_id = store.replays.save_sample(SAMPLE)
        rows = [*ranked(shift=2, error_at=1)]
        replay_id = store.replays.save(record(sample_id, rows, None, datetime.now(UTC)))
    with Store(store_url) as store:
        with store.engine.begin() as conn:
            command.downgrade(alembic_config(conn), "0009_rejudged")
        columns = {c["name"] for c in inspect(store.engine).get_columns("replay_ranking")}
        assert "id" in columns
        foreign = inspect(store.engine).get_foreign_keys("replay_ranking")
        assert [f["referred_table"] for f in foreign] == ["replay_run"]
        assert _ids_as_stored(store) == [list(r.ids) for r in rows]
        store.upgrade()
        assert store.revision() == HEAD
        assert "id" not in {c["name"] for c in inspect(store.engine).get_columns("replay_ranking")}
        assert inspect(store.engine).get_foreign_keys("replay_ranking") == []
        indexes = inspect(store.engine).get_indexes("replay_ranking")
        assert [(i["name"], i["column_names"]) for i in indexes] == [
            ("ix_replay_ranking_replay", ["replay_id"])
        ]
    with open_store(store_url) as store:
        assert store.replays.rankings(replay_id) == rows
