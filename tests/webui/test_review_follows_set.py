"""The dashboard follows the set's current version: after ``sets promote`` rewrites the set file,
a reload of the review queue served by ``retrieval-eval serve`` (a real uvicorn process) shows
the new version, labels and question count, without a restart."""

from __future__ import annotations

import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from helpers import served_page

from retrieval_eval.cli import cli
from retrieval_eval.errors import GoldenSetError
from retrieval_eval.labels.judgments import Judgment, write_judgments
from webui.browsing import free_port
from webui.test_serve import CLI, _env

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SET = "handbook.demo"
NEW_QUESTION = "Can I keep my notes when I cancel?"


def _config(folder: Path) -> Path:
    shutil.copy(EXAMPLES / "golden" / "handbook.yaml", folder / "handbook.yaml")
    config = folder / "retrieval_eval.yaml"
    corpus = str(EXAMPLES / "corpus")
    retrievers = {"handbook_bm25": {"type": "lexical", "corpus": corpus}}
    config.write_text(yaml.safe_dump({"sets": ["handbook.yaml"], "retrievers": retrievers}))
    return config


def _cards(page: Any) -> tuple[int, int, int]:
    """(set version, questions in the set, open candidates) as the page shows them."""
    ids = ("#set-version", "#set-questions", "#open-candidates")
    return tuple(int(page.text_content(i) or "-1") for i in ids)  # type: ignore[return-value]


def _labels(page: Any, qid: str) -> str:
    """The question's "Labels: ..." line, without the judged grades after it."""
    text = page.locator(f"section[data-question-id='{qid}'] p").first.text_content() or ""
    return text.split("Judged:")[0]


@pytest.mark.browser
def test_a_promoted_set_shows_on_reload_of_the_served_review_page(
    browser: Any, tmp_path: Path
) -> None:
    config = _config(tmp_path)
    db = f"sqlite:///{tmp_path / 'results.sqlite'}"
    args = ["--config", str(config), "--db", db]
    ran = CliRunner().invoke(cli, ["run", SET, "handbook_bm25", "--cutoffs", "1,3,10", *args])
    assert ran.exit_code == 0, ran.output
    port = free_port()
    server = subprocess.Popen(
        [CLI, "serve", *args, "--port", str(port)],
        cwd=tmp_path,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        served_page(server, f"{base}/")
        page = browser.new_page()
        assert page.goto(f"{base}/review?set={SET}").status == 200
        version, questions, open_before = _cards(page)
        assert version == 1 and questions > 0 and open_before >= 2
        section = next(
            s
            for s in page.locator("section.review-question").all()
            if s.locator("tr[data-document-id]").count() >= 3
        )
        qid = section.get_attribute("data-question-id")
        assert qid is not None
        rows = section.locator("tr[data-document-id]")
        relevant, not_relevant = (rows.nth(i).get_attribute("data-document-id") for i in (0, 1))
        assert relevant and not_relevant and relevant not in _labels(page, qid)

        judged = tmp_path / "judged.jsonl"
        write_judgments(
            [
                Judgment(question_id=qid, document_id=relevant, grade=2, rater="ann"),
                Judgment(question_id=qid, document_id=not_relevant, grade=0, rater="ann"),
                Judgment(question=NEW_QUESTION, document_id=relevant, grade=1, rater="ann"),
            ],
            judged,
        )
        promoted = CliRunner().invoke(cli, ["sets", "promote", SET, "--judgments", str(judged),
                                            "--config", str(config)])  # fmt: skip
        assert promoted.exit_code == 0, promoted.output

        page.reload()
        assert _cards(page)[:2] == (2, questions + 1)
        assert relevant in _labels(page, qid)
        for doc in (relevant, not_relevant):  # judged in the set now: no longer candidates
            row = f"section[data-question-id='{qid}'] tr[data-document-id='{doc}']"
            assert page.locator(row).count() == 0
        page.close()
    finally:
        server.send_signal(signal.SIGINT)
        _, err = server.communicate(timeout=20)
    assert server.returncode == 0, err


def test_the_config_source_reads_a_set_folder_again_when_a_file_changes(tmp_path: Path) -> None:
    from retrieval_eval.webui.source import ConfigSource

    folder = tmp_path / "sets"
    folder.mkdir()
    shutil.copy(EXAMPLES / "golden" / "handbook.yaml", folder / "handbook.yaml")
    config = tmp_path / "retrieval_eval.yaml"
    config.write_text(yaml.safe_dump({"sets": [{"directory": "sets"}]}))
    source = ConfigSource(config)
    first = source.config()
    assert source.config() is first  # nothing changed: not read again
    assert first.golden_sets.names() == [SET]
    other = yaml.safe_load((folder / "handbook.yaml").read_text())
    (folder / "other.yaml").write_text(yaml.safe_dump({**other, "identifier": "other.demo"}))
    assert source.config().golden_sets.names() == [SET, "other.demo"]  # a file added
    (folder / "other.yaml").write_text(yaml.safe_dump({**other, "identifier": "other.v2"}))
    assert source.config().golden_sets.names() == [SET, "other.v2"]  # a file rewritten
    whole = (folder / "other.yaml").read_text()
    (folder / "other.yaml").write_text(whole[: len(whole) // 2] + "\n  - [")  # half written
    with pytest.raises(GoldenSetError, match=r"other\.yaml"):
        source.config()
    (folder / "other.yaml").write_text(whole)  # whole again: read on the next call
    assert source.config().golden_sets.names() == [SET, "other.v2"]


def test_the_config_source_follows_the_config_the_environment_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from retrieval_eval.webui.source import ConfigSource

    _config(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    (other / "retrieval_eval.yaml").write_text(yaml.safe_dump({"sets": []}))
    monkeypatch.setenv("RETRIEVAL_EVAL_CONFIG", str(tmp_path / "retrieval_eval.yaml"))
    source = ConfigSource()  # as the plugin builds it: the config found as everywhere
    assert SET in source.config().golden_sets
    monkeypatch.setenv("RETRIEVAL_EVAL_CONFIG", str(other / "retrieval_eval.yaml"))
    assert SET not in source.config().golden_sets
