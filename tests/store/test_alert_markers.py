"""Alert markers: one alert per (DAG run, channel), whatever retries or re-runs happen."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from sqlalchemy import text

from retrieval_eval.store import Store, open_store
from retrieval_eval.store.migrate import HEAD, alembic_config, head_revision
from retrieval_eval.store.schema import VERSION_TABLE

KEY = "airflow:dag:manual__1"


def test_one_claim_wins_until_released(store: Store) -> None:
    assert store.alerts.state(KEY, "slack:alerts") is None
    assert store.alerts.claim(KEY, "slack:alerts", "regression") is True
    assert store.alerts.state(KEY, "slack:alerts") == "sending"
    assert store.alerts.claim(KEY, "slack:alerts", "regression") is False
    # other channels and other runs are independent
    assert store.alerts.claim(KEY, "webhook:ops", "regression") is True
    assert store.alerts.claim("airflow:dag:manual__2", "slack:alerts", "regression") is True
    store.alerts.release(KEY, "slack:alerts")  # delivery failed: a retry may send
    assert store.alerts.state(KEY, "slack:alerts") is None
    assert store.alerts.claim(KEY, "slack:alerts", "regression") is True
    store.alerts.sent(KEY, "slack:alerts")
    assert store.alerts.state(KEY, "slack:alerts") == "sent"
    assert store.alerts.claim(KEY, "slack:alerts", "invalid_run") is False


def test_racing_claims_have_exactly_one_winner(store: Store) -> None:
    with ThreadPoolExecutor(8) as pool:
        won = list(pool.map(lambda _: store.alerts.claim(KEY, "slack:x", "regression"), range(16)))
    assert won.count(True) == 1


def test_db_upgrade_takes_a_first_revision_store_to_head(store_url: str) -> None:
    from alembic import command

    with Store(store_url) as store, store.engine.begin() as conn:
        command.upgrade(alembic_config(conn), "0001_initial")
    with Store(store_url) as store:
        assert store.revision() == "0001_initial"
        with store.engine.connect() as conn:
            assert conn.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).scalar()
        store.upgrade()
        assert store.revision() == head_revision() == HEAD
    with open_store(store_url) as store:
        assert store.alerts.claim(KEY, "slack:x", "regression") is True
