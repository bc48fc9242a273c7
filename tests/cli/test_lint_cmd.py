"""``sets lint``: exit codes 0 (clean or warnings), 1 (errors), 2 (bad input); formats; the
result store is read, never created."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import EXAMPLES

from cli.test_cli_core import invoke, isolate_env

CONFIG = str(EXAMPLES / "retrieval_eval.yaml")
DEAD_SET = """identifier: lint.dead
questions:
  - {id: alive, question: How long is the password reset link valid?, form: match,
     expected_document_ids: [account/password-reset.md]}
  - {id: dead, question: Where did the old page go?, form: match,
     expected_document_ids: [account/removed-page.md]}
"""


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    isolate_env(monkeypatch, tmp_path)
    monkeypatch.setenv("RETRIEVAL_EVAL_HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_demo_lints_with_warnings_only_and_no_store_is_created(home: Path) -> None:
    result = invoke(
        "sets", "lint", "handbook.demo", "--retriever", "handbook_bm25", "--config", CONFIG
    )
    assert result.exit_code == 0, result.output
    assert "0 errors" in result.output
    assert "label_completeness [android-offline-storage]" in result.output
    assert "detectable" in result.output and "max_top1_drop 10 points" in result.output
    assert "skipped never_found: no result store at" in result.output
    assert not (home / "results.sqlite").exists()


def test_json_report_holds_findings_checks_and_power(home: Path) -> None:
    result = invoke(
        "sets",
        "lint",
        "handbook.demo",
        "--corpus",
        str(EXAMPLES / "corpus"),
        "--config",
        CONFIG,
        "--format",
        "json",
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["set_id"] == "handbook.demo" and report["questions"] == 46
    assert "form_honesty" in report["checks_run"] and "dead_labels" in report["checks_skipped"]
    overall = [f for f in report["power"]["figures"] if f["scope"] == "overall"]
    assert {f["metric"] for f in overall} == {"top1", "top3"}
    assert all(0 < f["detectable_drop"] < 1 for f in overall)


def test_dead_labels_exit_1(home: Path) -> None:
    (home / "dead.yaml").write_text(DEAD_SET)
    result = invoke(
        "sets",
        "lint",
        "dead.yaml",
        "--retriever",
        "handbook_bm25",
        "--config",
        CONFIG,
        "--format",
        "markdown",
    )
    assert result.exit_code == 1, result.output
    assert "| error | dead_labels | dead | account/removed-page.md |" in result.output


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["handbook.demo", "--corpus", "no/such/corpus"], "--corpus no/such/corpus: no such file"),
        (["absent.set"], "absent.set"),
        (["handbook.demo", "--retriever", "nope"], "nope"),
    ],
)
def test_bad_input_exits_2_naming_it(home: Path, args: list[str], expected: str) -> None:
    result = invoke("sets", "lint", *args, "--config", CONFIG)
    assert result.exit_code == 2, result.output
    assert expected in result.output


def test_a_malformed_corpus_exits_2_naming_the_file_and_line(home: Path) -> None:
    corpus = home / "corpus.jsonl"
    corpus.write_text('{"_id": "a", "text": "fine"}\nnot json\n')
    result = invoke("sets", "lint", "handbook.demo", "--corpus", str(corpus), "--config", CONFIG)
    assert result.exit_code == 2, result.output
    assert f"{corpus}: line 2: expected a JSON object" in result.output


def test_an_unreachable_store_skips_never_found_with_the_password_masked(home: Path) -> None:
    down = "postgresql://eval:Sup3r-Secr3t@127.0.0.1:1/results"
    result = invoke("sets", "lint", "handbook.demo", "--config", CONFIG, "--db", down)
    assert result.exit_code == 0, result.output
    assert "skipped never_found:" in result.output
    assert "Sup3r-Secr3t" not in result.output


def test_a_postgresql_store_is_read_never_created_and_its_runs_feed_never_found(
    home: Path, pg_url: str
) -> None:
    import psycopg
    from sqlalchemy.engine import make_url
    from store.builders import pg_schema

    with pg_schema(pg_url) as url:
        args = ("sets", "lint", "handbook.demo", "--config", CONFIG, "--db", url)
        empty = invoke(*args)
        assert empty.exit_code == 0, empty.output
        assert "skipped never_found: the result store" in empty.output
        schema = str(make_url(url).query["options"]).removeprefix("-csearch_path=")
        with psycopg.connect(pg_url) as conn:
            found = conn.execute(
                "select count(*) from information_schema.schemata where schema_name = %s", (schema,)
            ).fetchone()
            tables = conn.execute(
                "select count(*) from information_schema.tables where table_schema = %s",
                (schema,),
            ).fetchone()
        assert (found, tables) == ((1,), (0,))  # the schema is there, lint created nothing in it
        saved = invoke("run", "handbook.demo", "handbook_bm25", "--config", CONFIG, "--db", url)
        assert saved.exit_code == 0, saved.output
        linted = invoke(*args)
    assert linted.exit_code == 0, linted.output
    assert "WARNING never_found [postmortem-timing]: no stored run hit it at top 3" in linted.output
    assert "handbook_bm25: " in linted.output


def test_a_corpus_holding_none_of_the_targets_exits_2_naming_the_right_folder(home: Path) -> None:
    # the examples folder itself: its ids come out as corpus/account/..., the set says account/...
    result = invoke("sets", "lint", "handbook.demo", "--corpus", str(EXAMPLES), "--config", CONFIG)
    assert result.exit_code == 2, result.output
    assert f"corpus {EXAMPLES}: 0 of the 32 target ids of handbook.demo are in it" in result.output
    assert "a corpus id: 'corpus/account/" in result.output
    assert f"--corpus {EXAMPLES / 'corpus'}" in result.output
    assert "checks run" not in result.output


def test_a_beir_folder_is_linted_against_its_corpus_jsonl(home: Path) -> None:
    beir = EXAMPLES / "beir-mini"
    imported = invoke("sets", "import-beir", str(beir), "-o", str(home / "mini.yaml"))
    assert imported.exit_code == 0, imported.output
    result = invoke(
        "sets", "lint", str(home / "mini.yaml"), "--corpus", str(beir), "--format", "json"
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert {"form_honesty", "label_completeness"} <= set(report["checks_run"])


def test_an_unreachable_lookup_skips_dead_labels_with_the_reason(home: Path) -> None:
    (home / "rc.yaml").write_text(
        f"sets: [{EXAMPLES / 'golden' / 'handbook.yaml'}]\n"
        "retrievers:\n"
        "  htl: {type: http, url: 'http://127.0.0.1:9/search', ids: ids, retries: 0,\n"
        "        headers: {Authorization: 'Bearer hunter2-secret'},\n"
        "        lookup: {body: {ids: '{ids}'}, ids: found}}\n"
    )
    result = invoke("sets", "lint", "handbook.demo", "--retriever", "htl", "--config", "rc.yaml")
    assert result.exit_code == 0, result.output  # warnings only: the skipped check is no error
    assert "skipped dead_labels: retriever 'htl': check failed: HttpRetrievalError" in result.output
    assert "127.0.0.1:9" in result.output and "hunter2" not in result.output


def test_an_empty_postgresql_schema_skips_never_found_as_history_words_it(
    home: Path, pg_url: str
) -> None:
    from store.builders import pg_schema

    from retrieval_eval.store import Store

    with pg_schema(pg_url) as url:
        result = invoke("sets", "lint", "handbook.demo", "--config", CONFIG, "--db", url)
        assert result.exit_code == 0, result.output
        assert "skipped never_found: the result store at" in result.output
        assert "holds no retrieval-eval tables yet" in result.output
        assert "None" not in result.output
        with Store(url) as store:
            assert store.revision() is None  # nothing was created


def test_a_retrievers_corpus_that_is_not_the_sets_skips_the_text_checks(home: Path) -> None:
    corpus = EXAMPLES / "beir-mini" / "corpus.jsonl"
    (home / "rc.yaml").write_text(
        f"sets: [{EXAMPLES / 'golden' / 'handbook.yaml'}]\n"
        f"retrievers:\n  mini: {{type: lexical, corpus: {corpus}}}\n"
    )
    result = invoke("sets", "lint", "handbook.demo", "--retriever", "mini", "--config", "rc.yaml")
    assert result.exit_code == 1, result.output  # every target is a dead label in that index
    reason = f"corpus {corpus}: 0 of the 32 target ids of handbook.demo are in it"
    assert f"skipped form_honesty: {reason}" in result.output
    assert f"skipped label_completeness: {reason}" in result.output
