"""``run``'s report carries the figures beside a model judge's labels only when the store holds
machine judgments (``rater = judge:<name>``) of the set: JSON ``judge_figures``, text lines; and
every format gives them (issue 37, item 4): holes split into people-judged, machine-judged and
unjudged, and the hit rate three ways (people only, people + model, prediction-powered with its
interval), in ``run``'s text, Markdown and JSON, the stored run's HTML report and ``compare``'s
JSON, text, Markdown and CSV, each figure computed here from the set's labels, the stored run's rankings and the judgments this
test stored, not read from the code."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import shutil
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from click.testing import CliRunner, Result

from retrieval_eval import load_golden_set
from retrieval_eval.cli import cli
from retrieval_eval.evaluation.intervals import wilson
from retrieval_eval.evaluation.ppi import ppi_mean
from retrieval_eval.formats.numbers import ci, pct
from retrieval_eval.labels.judgments import Judgment
from retrieval_eval.store import open_store

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SET = "handbook.demo"
DEPTH = 3  # the run's deepest cutoff: the holes figure counts there too


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture
def demo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    monkeypatch.setenv("RETRIEVAL_EVAL_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("RETRIEVAL_EVAL_DB", raising=False)
    shutil.copy(EXAMPLES / "golden" / "handbook.yaml", tmp_path / "handbook.yaml")
    config = tmp_path / "retrieval_eval.yaml"
    config.write_text(yaml.safe_dump({
        "sets": ["handbook.yaml"],
        "retrievers": {"bm25": {"type": "lexical", "corpus": str(EXAMPLES / "corpus")}},
    }))  # fmt: skip
    return config, f"sqlite:///{tmp_path / 'results.sqlite'}"


def run_json(config: Path, db: str) -> dict[str, object]:
    result = invoke("run", SET, "bm25", "--config", str(config), "--db", db, "--format", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def test_judge_figures_only_with_machine_judgments(demo: tuple[Path, str]) -> None:
    config, db = demo
    first = run_json(config, db)
    assert "judge_figures" not in first  # no judgments at all: the report is as before
    questions = first["questions"]
    assert isinstance(questions, list)
    golden = load_golden_set(config.parent / "handbook.yaml")
    targets = {g.id: set(g.targets()) for g in golden.questions}
    # people grade one unlabelled top-3 document; the report still has no judge figures
    q = next(q for q in questions if len(q["retrieved"]) >= 3)
    doc = next(d for d in q["retrieved"][:3] if d not in targets[q["id"]])
    with open_store(db) as store:
        store.judgments.add(SET, [Judgment(question_id=q["id"], document_id=doc, grade=0,
                                            rater="ann")], channel="import", written_by="t")  # fmt: skip
    assert "judge_figures" not in run_json(config, db)
    plain = invoke("compare", "--runs", f"{first['run_id']},{first['run_id'] + 1}", "--db", db,
                   "--format", "json")  # fmt: skip
    assert plain.exit_code == 0, plain.output
    assert "judge_figures" not in json.loads(plain.stdout)["entries"][0]
    plain_csv = invoke("compare", "--runs", f"{first['run_id']},{first['run_id'] + 1}", "--db",
                       db, "--format", "csv")  # fmt: skip
    assert plain_csv.exit_code == 0, plain_csv.output
    assert "judge_" not in plain_csv.stdout.splitlines()[0]  # no model: no model's columns
    assert 'id="judge-figures"' not in html_report(first["run_id"], db)
    # a model judges every other top-3 place, calling each relevant
    machine = [
        Judgment(question_id=other["id"], document_id=d, grade=2, rater="judge:sim")
        for other in questions
        for d in other["retrieved"][:3]
        if d not in targets[other["id"]] and (other["id"], d) != (q["id"], doc)
    ]
    with open_store(db) as store:
        store.judgments.add(SET, machine, channel="import", written_by="t")
    document = run_json(config, db)
    figures = document["judge_figures"]
    assert isinstance(figures, dict)
    assert figures["machine_raters"] == ["judge:sim"]
    holes = figures["holes"]
    assert holes["depth"] == 3  # the run kept its top 3: holes counted there, as run_holes does
    assert holes["machine_judged"] == len(machine)
    assert holes["human_judged"] + holes["machine_judged"] + holes["unjudged"] == holes["slots"]
    top3 = figures["hit_rates"]["top3"]
    # the model calls everything relevant: people + model say every question with 3 results hits
    assert top3["human_machine"]["rate"] >= document["top3_hit_rate"]
    assert top3["human_machine"]["questions"] == len(questions)

    text = invoke("run", SET, "bm25", "--config", str(config), "--db", db)
    assert text.exit_code == 0, text.output
    assert "Model judgments (judge:sim)" in text.stdout
    assert "top-3 hit rate (95% intervals): people only" in text.stdout
    # the stored run shows the same figures (against the judgments stored now)
    shown = invoke("runs", "show", str(document["run_id"]), "--db", db, "--format", "json")
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["judge_figures"] == figures
    # compare's entry carries them too (JSON), and no entry has them without model judgments
    board = invoke("compare", "--runs", f"{first['run_id']},{document['run_id']}", "--db", db,
                   "--format", "json")  # fmt: skip
    assert board.exit_code == 0, board.output
    entry = json.loads(board.stdout)["entries"][0]
    assert entry["judge_figures"]["holes"]["machine_judged"] == len(machine)


def html_report(run_id: object, db: str) -> str:
    """``runs report RUN_ID``: the stored run's HTML page."""
    page = invoke("runs", "report", str(run_id), "--db", db)
    assert page.exit_code == 0, page.output
    return page.stdout


class _JudgeBlock(HTMLParser):
    """The text of the HTML report's ``details#judge-figures``: its summary and table rows."""

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0  # nested tags inside the block (0: outside)
        self.summary = ""
        self.rows: list[list[str]] = []
        self.tag = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.depth or ("id", "judge-figures") in attrs:
            self.depth += 1
            self.tag = tag
            if tag == "tr":
                self.rows.append([])
            elif tag in ("td", "th"):
                self.rows[-1].append("")

    def handle_endtag(self, tag: str) -> None:
        self.depth = max(self.depth - 1, 0)
        self.tag = ""

    def handle_data(self, data: str) -> None:
        if self.depth and self.tag == "summary":
            self.summary += data
        elif self.depth and self.tag in ("td", "th"):
            self.rows[-1][-1] += data


def _machine_grade(qid: str, doc: str, relevant: bool) -> int:
    """A seeded judge that errs: it calls a third of the pairs the other way."""
    wrong = hash_of(qid, doc) % 3 == 0
    return int(relevant != wrong) * 2


def hash_of(*parts: str) -> int:
    return int.from_bytes(hashlib.sha256("\0".join(parts).encode()).digest()[:4], "big")


def _expected(run: dict[str, Any], golden: Any, people: dict, machine: dict) -> dict[str, Any]:
    """The figures from first principles: labels, rankings and the stored grades."""
    labels = {g.id: {d: 1 for d in g.targets()} | dict(g.grades or {}) for g in golden.questions}
    human_judged = {(q, d) for q, docs in labels.items() for d in docs} | set(people)
    graded = {q for q, _ in people}
    slots = by_people = by_machine = 0
    for q in run["questions"]:
        for d in q["retrieved"][:DEPTH]:
            slots += 1
            by_people += (q["id"], d) in human_judged
            by_machine += (q["id"], d) not in human_judged and (q["id"], d) in machine
    expected: dict[str, Any] = {"holes": (slots, by_people, by_machine)}
    for k in (1, 3):
        y, yhat, other, combined = [], [], [], 0
        for q in run["questions"]:
            qid, top = q["id"], ([] if q["error"] else q["retrieved"][:k])

            def person(d: str, qid: str = qid) -> bool:
                return labels[qid].get(d, 0) >= 1 or people.get((qid, d), 0) >= 1

            if not labels[qid]:  # expects nothing: a hit when nothing came back
                hit = machine_hit = mixed = not top
            else:
                hit = any(person(d) for d in top)
                machine_hit = any(
                    machine[(qid, d)] >= 1 if (qid, d) in machine else person(d) for d in top
                )
                mixed = any(
                    person(d) if (qid, d) in human_judged else machine.get((qid, d), 0) >= 1
                    for d in top
                )
            combined += mixed
            if qid in graded and all((qid, d) in human_judged for d in top):
                y.append(hit)
                yhat.append(machine_hit)
            else:
                other.append(machine_hit)
        n = len(run["questions"])
        ppi = ppi_mean(np.array(y, float), np.array(yhat, float), np.array(other, float))
        expected[f"top{k}"] = {
            "human": (sum(y) / len(y), wilson(sum(y), len(y)), len(y)),
            "human_machine": (combined / n, wilson(combined, n), n),
            "ppi": (float(ppi.estimate), (float(ppi.low), float(ppi.high)), n),
        }
    return expected


def test_every_format_gives_the_holes_split_and_three_hit_rates(demo: tuple[Path, str]) -> None:
    config, db = demo
    common = ("--config", str(config), "--db", db)
    first = invoke("run", SET, "bm25", *common, "--format", "json")
    assert first.exit_code == 0, first.output
    run = json.loads(first.stdout)
    golden = load_golden_set(config.parent / "handbook.yaml")
    labelled = {g.id: set(g.targets()) | set(g.grades or {}) for g in golden.questions}
    targets = {g.id: set(g.targets()) for g in golden.questions}
    questions = [q for q in run["questions"] if targets[q["id"]]]
    # people grade the whole top 3 of every other question with targets and of each top-3 miss
    # (grade 0 where the set does not label it, but a few they find relevant), and one place of
    # a few others
    people: dict[tuple[str, str], int] = {}
    for i, q in enumerate(questions):
        unlabelled = [d for d in q["retrieved"][:DEPTH] if d not in labelled[q["id"]]]
        whole = i % 2 == 0 or not q["top3_hit"]
        for d in unlabelled if whole else unlabelled[:1] if i % 5 == 1 else []:
            people[(q["id"], d)] = 2 if hash_of(q["id"], d) % 4 == 0 else 0
    # a model judges every top-3 place of every question (targets too), erring on a third
    machine = {
        (q["id"], d): _machine_grade(q["id"], d, d in targets[q["id"]])
        for q in run["questions"]
        for d in q["retrieved"][:DEPTH]
    }
    rows = [Judgment(question_id=q, document_id=d, grade=g, rater="ann")
            for (q, d), g in people.items()]  # fmt: skip
    rows += [Judgment(question_id=q, document_id=d, grade=g, rater="judge:sim")
             for (q, d), g in machine.items()]  # fmt: skip
    with open_store(db) as store:
        store.judgments.add(SET, rows, channel="import", written_by="test")
    expected = _expected(run, golden, people, machine)
    assert all(expected[f"top{k}"]["human"][2] >= 10 for k in (1, 3))  # PPI is given

    second = invoke("run", SET, "bm25", *common, "--format", "json")
    assert second.exit_code == 0, second.output
    document = json.loads(second.stdout)
    figures = document["judge_figures"]
    slots, by_people, by_machine = expected["holes"]
    assert figures["holes"] == {
        "depth": DEPTH, "slots": slots, "human_judged": by_people, "machine_judged": by_machine,
        "unjudged": slots - by_people - by_machine,
        "shares": {"human": by_people / slots, "machine": by_machine / slots,
                   "unjudged": (slots - by_people - by_machine) / slots},
    }  # fmt: skip
    assert by_people and by_machine and slots - by_people - by_machine == 0  # the model fills all
    cells = {}
    for k in (1, 3):
        got = figures["hit_rates"][f"top{k}"]
        assert got["calibration_questions"] == expected[f"top{k}"]["human"][2]
        for kind in ("human", "human_machine", "ppi"):
            rate, interval, n = expected[f"top{k}"][kind]
            assert got[kind]["rate"] == pytest.approx(rate, abs=1e-12), (k, kind)
            assert got[kind]["ci"] == pytest.approx(list(interval), abs=1e-12), (k, kind)
            assert got[kind]["questions"] == n
            cells[(k, kind)] = f"{pct(rate)} {ci(interval)}"
    # the rates differ: the judge's errors move them, so a format mixing them up is seen
    assert len({cells[(3, kind)] for kind in ("human", "human_machine", "ppi")}) == 3
    shares = f"people {pct(by_people / slots)} / model {pct(by_machine / slots)} / nobody 0.0%"
    calibration = expected["top3"]["human"][2]

    text = invoke("run", SET, "bm25", *common)
    assert text.exit_code == 0, text.output
    assert (
        f"top-3 hit rate (95% intervals): people only {cells[(3, 'human')]} over {calibration} "
        f"questions people judged whole; people + model {cells[(3, 'human_machine')]}; "
        f"prediction-powered {cells[(3, 'ppi')]}"
    ) in text.stdout
    assert f"people judged {pct(by_people / slots)}, a model only {pct(by_machine / slots)}" in (
        text.stdout
    )

    markdown = invoke("run", SET, "bm25", *common, "--format", "markdown")
    assert markdown.exit_code == 0, markdown.output
    md = markdown.stdout
    assert "<details><summary>Model judgments (judge:sim): of the top 3" in md
    row = (
        f"| top-3 | {cells[(3, 'human')]} over {calibration} | {cells[(3, 'human_machine')]} | "
        f"{cells[(3, 'ppi')]} |"
    )
    assert row in md
    # the stored run's Markdown (runs show) gives the same block
    stored = invoke("runs", "show", str(document["run_id"]), "--db", db, "--format", "markdown")
    assert stored.exit_code == 0, stored.output
    assert row in stored.stdout

    ids = f"{run['run_id']},{document['run_id']}"
    board = invoke("compare", "--runs", ids, "--db", db, "--format", "json")
    assert board.exit_code == 0, board.output
    for entry in json.loads(board.stdout)["entries"]:
        assert entry["judge_figures"] == figures  # both runs ranked alike: the same figures
    for fmt in ("text", "markdown"):
        shown = invoke("compare", "--runs", ids, "--db", db, "--format", fmt)
        assert shown.exit_code == 0, shown.output
        out = shown.stdout
        assert "Model judgments (judge:sim), the hit rate three ways (95% CI)" in out
        assert out.count(shares) == 2  # once per retriever, on its first row
        for k in (1, 3):
            for kind in ("human", "human_machine", "ppi"):
                cell = cells[(k, kind)]
                assert out.count(cell) >= 2, (fmt, k, kind, cell)

    # the stored run's HTML report: the holes sentence and a row per depth, the same cells
    block = _JudgeBlock()
    block.feed(html_report(document["run_id"], db))
    assert block.summary.startswith("Model judgments (judge:sim): of the top 3")
    assert f"people judged {pct(by_people / slots)}, a model only {pct(by_machine / slots)}" in (
        block.summary
    )
    assert block.rows[0] == [
        "depth", "people only [95% CI]", "people + model [95% CI]", "prediction-powered [95% CI]",
    ]  # fmt: skip
    for k, row in zip((1, 3), block.rows[1:], strict=True):
        assert row == [
            f"top-{k}", f"{cells[(k, 'human')]} over {expected[f'top{k}']['human'][2]}",
            cells[(k, "human_machine")], cells[(k, "ppi")],
        ]  # fmt: skip

    # compare's CSV: per retriever the holes split and, per depth, the three rates and bounds
    sheet = invoke("compare", "--runs", ids, "--db", db, "--format", "csv")
    assert sheet.exit_code == 0, sheet.output
    entries = list(csv.DictReader(io.StringIO(sheet.stdout)))
    assert len(entries) == 2
    for entry in entries:
        assert [entry[f"judge_holes_{key}"] for key in ("depth", "slots", "human_judged",
                "machine_judged", "unjudged")] == [
            str(n) for n in (DEPTH, slots, by_people, by_machine, slots - by_people - by_machine)
        ]  # fmt: skip
        for k in (1, 3):
            human_n = expected[f"top{k}"]["human"][2]
            assert entry[f"judge_top{k}_calibration_questions"] == str(human_n)
            for kind in ("human", "human_machine", "ppi"):
                rate, (low, high), _ = expected[f"top{k}"][kind]
                got = [float(entry[f"judge_top{k}_{kind}_{key}"])
                       for key in ("rate", "ci_low", "ci_high")]  # fmt: skip
                assert got == pytest.approx([rate, low, high], abs=1e-12), (k, kind)
