"""Store URL lookup order, path resolution, backends, and masking (no database needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval_eval.config.models import Config, load_config
from retrieval_eval.errors import InvalidInputError, StoreUnavailableError
from retrieval_eval.store import mask_url, open_store, resolve_store_url, store_url_for


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("RETRIEVAL_EVAL_DB", raising=False)
    monkeypatch.setenv("RETRIEVAL_EVAL_HOME", str(tmp_path / "home"))


def _config(tmp_path: Path, store: str) -> Config:
    path = tmp_path / "conf" / "retrieval_eval.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"store: {store!r}\n", encoding="utf-8")
    return load_config(path)


def test_lookup_order_is_flag_then_environment_then_config_then_default(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    config = _config(tmp_path, "sqlite:///from-config.sqlite")
    monkeypatch.setenv("RETRIEVAL_EVAL_DB", "sqlite:////env/results.sqlite")
    assert resolve_store_url("sqlite:////flag.sqlite", config) == "sqlite:////flag.sqlite"
    assert resolve_store_url(None, config) == "sqlite:////env/results.sqlite"
    monkeypatch.delenv("RETRIEVAL_EVAL_DB")
    assert resolve_store_url(None, config) == f"sqlite:///{tmp_path}/conf/from-config.sqlite"
    assert resolve_store_url(None, Config()) == f"sqlite:///{tmp_path}/home/results.sqlite"
    assert resolve_store_url() == f"sqlite:///{tmp_path}/home/results.sqlite"


def test_default_home_is_in_the_user_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RETRIEVAL_EVAL_HOME")
    expected = Path("~/.retrieval-eval/results.sqlite").expanduser()
    assert resolve_store_url() == f"sqlite:///{expected}"


def test_relative_paths_on_the_command_line_resolve_against_the_working_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    assert resolve_store_url("sqlite:///.retrieval_eval/demo.sqlite") == (
        f"sqlite:///{tmp_path}/.retrieval_eval/demo.sqlite"
    )


def test_a_bare_path_in_the_config_is_a_sqlite_file_beside_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("RETRIEVAL_EVAL_DB", raising=False)
    monkeypatch.chdir(tmp_path)  # not the config's folder
    for store in ("results.sqlite", "data/results.sqlite"):
        expected = f"sqlite:///{tmp_path}/conf/{store}"
        assert resolve_store_url(None, _config(tmp_path, store)) == expected
    # a misspelt scheme is no path; on the command line a bare path is not taken either
    with pytest.raises(InvalidInputError, match="cannot parse store URL 'postgres:/db'"):
        resolve_store_url(None, _config(tmp_path, "postgres:/db"))
    with pytest.raises(InvalidInputError, match=r"^--db: cannot parse"):
        resolve_store_url("results.sqlite")


def test_postgresql_urls_use_psycopg_3_and_keep_their_options() -> None:
    url = "postgresql://eval:pw@db.example:5433/results?sslmode=require"
    assert resolve_store_url(url) == (
        "postgresql+psycopg://eval:pw@db.example:5433/results?sslmode=require"
    )
    assert resolve_store_url("postgresql+psycopg://u@h/d") == "postgresql+psycopg://u@h/d"


def test_the_airflow_connection_wins_and_its_postgres_uri_is_accepted(tmp_path: Path) -> None:
    config = _config(tmp_path, "sqlite:///from-config.sqlite")
    asked: list[str] = []

    def connection_uri(connection_id: str) -> tuple[str, str]:
        asked.append(connection_id)
        return "postgres", "postgres://eval:pw@db.example:5432/results?options=-csearch_path%3Dx"

    assert store_url_for(config, "re_db", connection_uri) == (
        "postgresql+psycopg://eval:pw@db.example:5432/results?options=-csearch_path%3Dx"
    )
    assert asked == ["re_db"]
    assert store_url_for(config, None, connection_uri) == resolve_store_url(None, config)
    assert asked == ["re_db"]  # no connection id: no connection read
    with pytest.raises(InvalidInputError, match="Airflow connection 'bad'") as caught:
        store_url_for(config, "bad", lambda _: ("mysql", "mysql://u:topsecret@h/d"))
    assert "topsecret" not in str(caught.value)


@pytest.mark.parametrize("uri", ["generic://eval:topsecret@db/results", "sqlite:///x.sqlite"])
def test_a_connection_of_another_type_is_refused_naming_id_and_type(
    tmp_path: Path, uri: str
) -> None:
    """`--conn-type postgres` without the postgres provider silently makes a generic one."""
    config = _config(tmp_path, "sqlite:///unused.sqlite")
    with pytest.raises(InvalidInputError) as caught:
        store_url_for(config, "re_db", lambda _: (uri.split(":", 1)[0], uri))
    found = uri.split(":", 1)[0]
    assert "Airflow connection 're_db'" in str(caught.value)
    assert f"has type {found!r}" in str(caught.value) and "'postgres' connection" in str(
        caught.value
    )
    assert "topsecret" not in str(caught.value)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("mysql://root:topsecret@localhost/db", "unsupported store backend 'mysql'"),
        ("sqlite://", "names no file"),
        ("sqlite:///:memory:", "names no file"),
        ("not a url", "cannot parse"),
    ],
)
def test_bad_urls_are_input_errors_naming_their_source(url: str, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message) as caught:
        resolve_store_url(url)
    assert str(caught.value).startswith("--db:")
    assert "topsecret" not in str(caught.value)


def test_a_bad_url_in_the_config_names_the_config_file(tmp_path: Path) -> None:
    config = _config(tmp_path, "oracle://scott:tiger@host/db")
    with pytest.raises(InvalidInputError) as caught:
        resolve_store_url(None, config)
    assert "retrieval_eval.yaml: store:" in str(caught.value)
    assert "tiger" not in str(caught.value)


def test_masking_hides_passwords_even_in_unparsable_urls() -> None:
    assert mask_url("postgresql://eval:s3cr3t@host:5432/db") == "postgresql://eval:***@host:5432/db"
    assert "s3cr3t" not in mask_url("postgresql://eval:s3cr3t@host:port-is-bad/db")
    assert mask_url("sqlite:////tmp/x.sqlite") == "sqlite:////tmp/x.sqlite"


def test_an_unreachable_server_is_exit_3_without_the_password() -> None:
    with pytest.raises(StoreUnavailableError) as caught:
        open_store("postgresql://eval:hunter2-secret@127.0.0.1:1/results")
    message = str(caught.value)
    assert "hunter2-secret" not in message
    assert "postgresql+psycopg://eval:***@127.0.0.1:1/results" in message
    assert caught.value.exit_code == 3
    assert caught.value.__cause__ is None  # nothing chained that could print the password


def test_an_unwritable_sqlite_location_is_unreachable(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", encoding="utf-8")
    with pytest.raises(StoreUnavailableError, match="cannot create the folder"):
        open_store(f"sqlite:///{blocker}/results.sqlite")
