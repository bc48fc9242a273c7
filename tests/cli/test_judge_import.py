"""``sets judge import``: line-numbered errors and unknown question ids (exit 2, nothing stored),
the raters' agreement, conflicts and merge rule, the graded rows stored, a store that is down
(exit 3, saying nothing was stored)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import EXAMPLES

from cli.test_cli_core import invoke, isolate_env
from retrieval_eval.labels.agreement import MERGE_RULE, cohen_kappa, krippendorff_alpha
from retrieval_eval.labels.judgments import read_judgments
from retrieval_eval.store import open_store

CONFIG = str(EXAMPLES / "retrieval_eval.yaml")
SET = "handbook.demo"
PAIRS = [
    ("refund-eu-monthly", "billing/refunds.md"),
    ("refund-annual-window", "account/delete-account.md"),
    ("refund-outside-eu-monthly", "billing/refunds-eu.md"),
    ("offline-mode-phone", "mobile/sync.md"),
    ("offline-mode-phone", "billing/refunds.md"),
]
ADA = [2, 0, 1, 3, 0]
BOB = [0, 0, 1, 2, 1]  # conflicts: the first pair (two apart), the last (either side of 1)


def _rows(*raters: tuple[str, list[int]]) -> list[dict[str, object]]:
    return [
        {"question_id": q, "document_id": d, "grade": grades[i], "rater": name}
        for name, grades in raters
        for i, (q, d) in enumerate(PAIRS)
    ]


def _write(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    isolate_env(monkeypatch, tmp_path)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_two_raters_kappa_conflicts_and_the_graded_rows_stored(home: Path) -> None:
    rows = [*_rows(("ada", ADA), ("bob", BOB)), {**_rows(("ada", ADA))[0], "grade": None}]
    rows[-1]["document_id"] = "billing/plans.md"  # not judged yet: skipped and counted
    path = _write(home / "judged.jsonl", rows)
    result = invoke("sets", "judge", "import", str(path), "--config", CONFIG)
    assert result.exit_code == 0, result.output
    out = result.output
    assert f"{path}: 11 row(s) for set {SET}: 10 graded, 1 without a grade (skipped)" in out
    kappa = cohen_kappa(ADA, BOB, "quadratic")
    assert f"Cohen's κ (quadratic weights) {kappa:.3f} over 5 pair(s)" in out
    assert (
        "conflicts: 2\n  refund-eu-monthly / billing/refunds.md: ada 2, bob 0\n"
        "  offline-mode-phone / billing/refunds.md: ada 0, bob 1\n" in out
    )
    assert f"merge rule: {MERGE_RULE}" in out
    assert "stored 10 judgment(s) of handbook.demo" in out
    with open_store(f"sqlite:///{home / 'results.sqlite'}") as store:
        assert store.judgments.read(SET) == read_judgments(path)[:10]
        assert {(s.channel, s.written_by != "") for s in store.judgments.stored(SET)} == {
            ("import", True)
        }


def test_three_raters_get_krippendorffs_alpha(home: Path) -> None:
    carol = [1, 0, 1, 3, 0]
    path = _write(home / "three.csv", [])
    lines = ["question_id,document_id,grade,rater"] + [
        f"{r['question_id']},{r['document_id']},{r['grade']},{r['rater']}"
        for r in _rows(("ada", ADA), ("bob", BOB), ("carol", carol))
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = invoke("sets", "judge", "import", str(path), "--set", SET, "--config", CONFIG)
    assert result.exit_code == 0, result.output
    units = {p: {"ada": ADA[i], "bob": BOB[i], "carol": carol[i]} for i, p in enumerate(PAIRS)}
    alpha = krippendorff_alpha(units, "ordinal")
    assert f"Krippendorff's α (ordinal) {alpha:.3f} over 5 pair(s)" in result.output


def test_unknown_question_ids_name_line_and_id_and_store_nothing(home: Path) -> None:
    rows = _rows(("ada", ADA))
    rows[3]["question_id"] = "refund-eu-montly"
    path = _write(home / "typo.jsonl", rows)
    result = invoke("sets", "judge", "import", str(path), "--set", SET, "--config", CONFIG)
    assert result.exit_code == 2
    out = result.output
    assert f"{path}: line 4: question_id: 'refund-eu-montly' is not a question of set {SET} " in out
    assert "(did you mean 'refund-eu-monthly'" in out
    assert "fix the id, or leave question_id empty and give the text of a new question" in out
    assert not (home / "results.sqlite").exists()
    # without --set, no configured set holds the id: the fix is named
    bare = invoke("sets", "judge", "import", str(path), "--config", CONFIG)
    assert bare.exit_code == 2 and "give --set SET (sets: handbook.demo)" in bare.output


def test_bad_rows_are_line_numbered_and_nothing_is_stored(home: Path) -> None:
    rows = _rows(("ada", ADA))
    rows[1]["grade"] = 5
    path = _write(home / "bad.jsonl", rows)
    result = invoke("sets", "judge", "import", str(path), "--set", SET, "--config", CONFIG)
    assert result.exit_code == 2
    assert f"{path}: line 2: grade:" in result.output and "0 to 3" in result.output
    assert not (home / "results.sqlite").exists()


def test_a_store_that_is_down_is_exit_3_and_says_nothing_was_stored(home: Path) -> None:
    path = _write(home / "judged.jsonl", _rows(("ada", ADA)))
    down = "postgresql://postgres@127.0.0.1:1/test"
    result = invoke("sets", "judge", "import", str(path), "--config", CONFIG, "--db", down)
    assert result.exit_code == 3
    assert "one rater, nothing to compare" in result.output  # the summary came first
    assert f"nothing was stored: the 5 graded row(s) of {path} are still only in the file" in (
        result.output
    )
