"""A pair judged not relevant (grade 0) stays judged everywhere: ``sets pool`` leaves it out,
``compare`` and the pool's holes count it judged, ``sets lint`` does not offer it again, whether
the grade is in the store or, after ``sets promote``, in the set file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

from cli.test_pool_cmd import holes
from retrieval_eval import load_golden_set
from retrieval_eval.cli import cli
from retrieval_eval.labels.judgments import Judgment
from retrieval_eval.store import open_store

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SET = "handbook.demo"
# lint's completeness candidate: the iOS page is 82 % like the Android question's target
LINT_PAIR = ("android-offline-storage", "mobile/offline-mode-ios.md")


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture
def demo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A copy of the demo set with two BM25 retrievers over the demo corpus; the config."""
    monkeypatch.setenv("RETRIEVAL_EVAL_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("RETRIEVAL_EVAL_DB", raising=False)
    shutil.copy(EXAMPLES / "golden" / "handbook.yaml", tmp_path / "handbook.yaml")
    corpus = str(EXAMPLES / "corpus")
    config = tmp_path / "retrieval_eval.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "sets": ["handbook.yaml"],
                "retrievers": {
                    "bm25": {"type": "lexical", "corpus": corpus},
                    "bm25_small": {"type": "lexical", "corpus": corpus, "chunk_size": 40},
                },
            }
        )
    )
    return config, tmp_path / "handbook.yaml"


def pooled(config: Path, db: str, *extra: str) -> tuple[set[tuple[str, str]], Result]:
    result = invoke(
        "sets", "pool", SET, "--retrievers", "bm25", "--config", str(config), "--db", db,
        "--no-texts", *extra,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    return {(r["question_id"], r["document_id"]) for r in rows}, result


def compared_holes(config: Path, db: str) -> int:
    result = invoke("compare", SET, "bm25", "bm25_small", "--config", str(config), "--db", db,
                    "--format", "json")  # fmt: skip
    assert result.exit_code == 0, result.output
    entries = json.loads(result.stdout)["entries"]
    return next(e["holes_unjudged"] for e in entries if e["name"] == "bm25")


def lint_candidates(config: Path, *extra: str) -> set[tuple[str, str]]:
    result = invoke("sets", "lint", SET, "--retriever", "bm25", "--config", str(config),
                    "--format", "json", *extra)  # fmt: skip
    findings = json.loads(result.stdout)["findings"]
    return {
        (f["question_ids"][0], doc)
        for f in findings
        if f["check"] == "label_completeness"
        for doc in f["doc_ids"]
    }


def test_grade_0_in_the_store_then_in_the_promoted_set_is_never_offered_again(
    demo: tuple[Path, Path], tmp_path: Path
) -> None:
    config, set_file = demo
    db = f"sqlite:///{tmp_path / 's.db'}"
    for name in ("bm25", "bm25_small"):
        ran = invoke("run", SET, name, "--cutoffs", "1,3,10", "--config", str(config), "--db", db)
        assert ran.exit_code == 0, ran.output
    before, first = pooled(config, db)
    depth, unjudged, slots = holes(first)["bm25"]
    assert depth == 10 and compared_holes(config, db) == unjudged
    assert LINT_PAIR in before and LINT_PAIR in lint_candidates(config, "--db", db)

    # three of bm25's unjudged places and lint's candidate judged not relevant, in the store
    ranked = sorted(_ranked_pairs(first) - {LINT_PAIR})[:3]
    rows = [Judgment(question_id=q, document_id=d, grade=0, rater="ann") for q, d in ranked]
    rows.append(Judgment(question_id=LINT_PAIR[0], document_id=LINT_PAIR[1], grade=0, rater="bo"))
    with open_store(db) as store:
        store.judgments.add(SET, rows, channel="import", written_by="test")
    judged = {(r.question_id, r.document_id) for r in rows}
    in_top = 3 + (LINT_PAIR in _ranked_pairs(first))

    after, second = pooled(config, db)
    assert after == before - judged
    assert holes(second)["bm25"] == (10, unjudged - in_top, slots)
    assert compared_holes(config, db) == unjudged - in_top
    assert LINT_PAIR not in lint_candidates(config, "--db", db)

    # promoted: the grade-0 pairs are written to the set, which keeps them judged without a store
    promoted = invoke("sets", "promote", SET, "--from-store", "--config", str(config), "--db", db)
    assert promoted.exit_code == 0, promoted.output
    assert "4 judged not relevant" in promoted.output
    golden = {q.id: q for q in load_golden_set(set_file).questions}
    assert all(golden[q].relevance[d] == 0 and d not in golden[q].targets() for q, d in judged)
    empty = f"sqlite:///{tmp_path / 'none.db'}"  # no store: --fresh, no stored judgment
    fresh, third = pooled(config, empty, "--fresh", "--depth", "10")
    assert fresh == after
    assert holes(third)["bm25"] == (10, unjudged - in_top, slots)
    assert LINT_PAIR not in lint_candidates(config)


def _ranked_pairs(result: Result) -> set[tuple[str, str]]:
    """The pairs the pool has from bm25's rankings (not only from lint)."""
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    return {(r["question_id"], r["document_id"]) for r in rows if "bm25 #" in r["source"]}


@pytest.mark.postgres
def test_fresh_pooling_refuses_when_the_store_of_judgments_cannot_be_read(
    demo: tuple[Path, Path], pg_url: str
) -> None:
    # a store that is configured but gone (its database dropped or renamed): its judgments
    # cannot be left out, so nothing is written rather than a pool offering them again
    from sqlalchemy.engine import make_url

    gone = make_url(pg_url).set(database="retrieval_eval_judged_gone").render_as_string(False)
    config, _ = demo
    result = CliRunner().invoke(
        cli, ["sets", "pool", SET, "--retrievers", "bm25", "--fresh", "--no-texts",
              "--config", str(config), "--db", gone],
    )  # fmt: skip
    assert result.exit_code == 3, result.output
    assert "cannot reach the result store" in result.stderr and result.stdout == ""
    assert "retrieval_eval_judged_gone" in result.stderr
