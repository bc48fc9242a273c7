"""SciFact with a model judge (docs/how-to/model-judges.md states these figures): the qrels stand
in for the team's raters (a listed document is grade 1, any other 0) and a simulated judge of
κ ≈ 0.6 (a ``type: python`` judge: it says 1 for a relevant pair with probability 0.82, for an
irrelevant one 0.18, seeded by the pair's texts) grades the pool of three reference runs.

Through the CLI: holes@10 before and after (``sets pool``), the judge's calibration (κ against
the raters on a seeded sample, Kendall's τ of the three runs' top-10 hit rates); and again here
from the qrels, the run files and the same simulated judge. Then the raters grade the whole top
10 of 100 random questions (``sets judge import``) and ``runs show`` gives the top-10 hit rate
three ways: people only equals the qrels' rate on those questions, people + model's interval
misses the true (qrels) rate, the prediction-powered one holds it."""

from __future__ import annotations

import csv
import json
import random
import re
from collections import defaultdict
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result
from helpers import shared_collection

from retrieval_eval.cli import cli
from retrieval_eval.golden.importers import import_beir
from retrieval_eval.labels.agreement import cohen_kappa
from retrieval_eval.labels.pooling import excerpt

RUNS = {
    "bm25s": "bm25s.run",
    "rank_bm25": "rank_bm25_okapi.run",
    "dense_minilm": "dense_minilm.run",
}
JUDGE = """
import hashlib
import json


def make_judge(relevant_file, p_hit=0.82, p_false=0.18):
    relevant = {q: set(texts) for q, texts in json.load(open(relevant_file)).items()}

    def grade(question, text):
        truth = text in relevant.get(question, ())
        digest = hashlib.sha256((question + "\\x00" + text).encode()).digest()
        draw = int.from_bytes(digest[:8], "big") / 2**64
        return int(draw < (p_hit if truth else p_false))

    return grade
"""


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def holes(result: Result) -> dict[str, float]:
    return {
        m[1]: float(m[2])
        for m in re.finditer(r"^  (\S+): .*holes@10 ([0-9.]+)%", result.stderr, re.MULTILINE)
    }


def test_scifact_holes_before_and_after_a_calibrated_simulated_judge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scifact = shared_collection("scifact")
    monkeypatch.setenv("RETRIEVAL_EVAL_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    golden = import_beir(scifact, "test", identifier="scifact.test")
    set_file = tmp_path / "scifact.json"
    set_file.write_text(golden.model_dump_json())
    corpus = {}
    with (scifact / "corpus.jsonl").open() as handle:
        for line in handle:
            doc = json.loads(line)
            corpus[doc["_id"]] = doc
    labels: dict[str, set[str]] = defaultdict(set)
    with (scifact / "qrels" / "test.tsv").open() as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            if int(row["score"]) > 0:
                labels[row["query-id"]].add(row["corpus-id"])
    texts = {q.id: q.question for q in golden.questions}
    # the texts the judge is shown: the pool's excerpt of what document_texts gives
    relevant = {
        texts[q]: [excerpt(f"{corpus[d]['title']}\n{corpus[d]['text']}") for d in docs]
        for q, docs in labels.items()
    }
    (tmp_path / "relevant.json").write_text(json.dumps(relevant))
    (tmp_path / "sim_judge.py").write_text(JUDGE)
    retrievers = {
        name: {"type": "run_file", "path": str(scifact / "runs" / file), "corpus": str(scifact)}
        for name, file in RUNS.items()
    }
    judges = {"sim": {"type": "python", "factory": "sim_judge:make_judge", "paths": ["."],
                      "options": {"relevant_file": "relevant.json"}}}  # fmt: skip
    config = tmp_path / "retrieval_eval.yaml"
    run = {"cutoffs": [1, 3, 10], "depths": [1, 3, 10]}
    settings = {"sets": [str(set_file)], "retrievers": retrievers, "run": run, "judges": judges}
    config.write_text(yaml.safe_dump(settings))
    db = f"sqlite:///{tmp_path / 's.db'}"
    common = ("--config", str(config), "--db", db)
    for name in RUNS:
        assert invoke("run", str(set_file), name, *common).exit_code in (0, 1)
    pool_file = tmp_path / "pool.jsonl"
    before = invoke("sets", "pool", str(set_file), "--retrievers", ",".join(RUNS), *common,
                    "--output", str(pool_file), "--no-lint")  # fmt: skip
    assert before.exit_code == 0, before.output
    pool = [json.loads(line) for line in pool_file.read_text().splitlines()]

    auto = invoke("sets", "judge", "auto", str(set_file), "--judge", "sim", "--pool", str(pool_file), *common)  # fmt: skip
    assert auto.exit_code == 0, auto.output
    # the raters' negatives: a seeded sample of pool pairs, graded 0 as the qrels say
    rng = random.Random(5)
    negatives = [{**r, "grade": 0, "rater": "qrels"} for r in rng.sample(pool, 400)]
    people = tmp_path / "people.jsonl"
    people.write_text("".join(json.dumps(r) + "\n" for r in negatives))
    calibrated = invoke("sets", "judge", "calibrate", str(set_file), "--judge", "sim",
                        "--judgments", str(people), "--retrievers", "bm25s", "--sample", "600",
                        "--seed", "1", "--json", *common)  # fmt: skip
    assert calibrated.exit_code == 0, calibrated.output
    figures = json.loads(calibrated.stdout)
    after = invoke("sets", "pool", str(set_file), "--retrievers", ",".join(RUNS), *common,
                   "--output", str(tmp_path / "after.jsonl"), "--no-lint")  # fmt: skip
    assert after.exit_code == 0, after.output

    print(  # the figures the docs state, printed for the record (pytest -s)
        "holes before", holes(before), "after", holes(after),
        "kappa", figures["kappa"], figures["kappa_low"], figures["kappa_high"],
        "tau", figures["tau"], "rates", figures["rates"], "pairs", figures["pairs"],
    )  # fmt: skip
    assert holes(before) == {"bm25s": 90.9, "rank_bm25": 91.0, "dense_minilm": 91.2}
    assert holes(after) == {"bm25s": 0.0, "rank_bm25": 0.0, "dense_minilm": 0.0}
    # the calibration: 600 of the 739 rated pairs (339 qrels, 400 negatives), κ ≈ 0.6
    assert figures["people_pairs"] == 339 + 400 and figures["pairs"] == 600
    people, judge = _pairs(figures)
    assert figures["kappa"] == pytest.approx(cohen_kappa(people, judge, "quadratic"))
    assert 0.55 <= figures["kappa"] <= 0.67 and figures["passed"]
    for grade in (0, 1):  # the simulation's agreement per grade, within binomial noise
        assert figures["per_grade"][str(grade)] == pytest.approx(0.82, abs=0.06)
    # people's top-10 hit rates, from the qrels and the run files read here
    for name, file in RUNS.items():
        lines: dict[str, list[tuple[float, str]]] = defaultdict(list)
        for line in (scifact / "runs" / file).read_text().splitlines():
            qid, _, doc, _, score, _ = line.split()
            lines[qid].append((float(score), doc))
        hits = sum(
            any(doc in labels[q.id] for _, doc in sorted(lines[q.id], reverse=True)[:10])
            for q in golden.questions
        )
        assert figures["rates"][name]["people"] == pytest.approx(hits / len(golden.questions))
        assert figures["rates"][name]["judge"] > figures["rates"][name]["people"]
    assert figures["tau"] == 1.0

    # the hit rate three ways: the raters grade the whole top 10 of a random sample of 100
    # questions (every document of the three runs' top 10 the qrels do not list: 0), stored
    truth = {name: figures["rates"][name]["people"] for name in RUNS}
    stored = {}
    for run_id in (1, 2, 3):
        shown = invoke("runs", "show", str(run_id), *common, "--format", "json")
        assert shown.exit_code == 0, shown.output
        stored[json.loads(shown.stdout)["retriever"]] = run_id
    tops = {name: {q["id"]: q["retrieved"][:10] for q in _stored_questions(stored[name], common)}
            for name in RUNS}  # fmt: skip
    sample = random.Random(7).sample(sorted(q.id for q in golden.questions), 100)
    graded = [
        {"question_id": qid, "document_id": doc, "grade": 0, "rater": "qrels"}
        for qid in sample
        for doc in sorted({d for name in RUNS for d in tops[name][qid]} - labels[qid])
    ]
    people_file = tmp_path / "whole.jsonl"
    people_file.write_text("".join(json.dumps(r) + "\n" for r in graded))
    imported = invoke("sets", "judge", "import", str(people_file), "--set", "scifact.test", *common)
    assert imported.exit_code == 0, imported.output
    three = {}
    for name in RUNS:
        shown = invoke("runs", "show", str(stored[name]), *common, "--format", "json")
        top10 = json.loads(shown.stdout)["judge_figures"]["hit_rates"]["top10"]
        three[name] = top10
        # people only: the sample's questions, whose whole top 10 people judged, by the qrels
        whole = [q for q in sample if set(tops[name][q]) - labels[q]]  # a person graded one
        hits = sum(bool(set(tops[name][q]) & labels[q]) for q in whole)
        assert top10["calibration_questions"] == len(whole)
        assert top10["human"]["rate"] == pytest.approx(hits / len(whole))
        # people + model carries the judge's false positives: far above the truth, and its
        # interval misses it; the prediction-powered interval holds it
        low, high = top10["human_machine"]["ci"]
        assert low > truth[name]
        low, high = top10["ppi"]["ci"]
        assert low <= truth[name] <= high
    print("three hit rates at top 10", {n: {k: (r[k]["rate"], r[k]["ci"], r[k]["questions"]) for k in
          ("human", "human_machine", "ppi")} for n, r in three.items()}, "truth", truth)  # fmt: skip


def _stored_questions(run_id: int, common: tuple[str, ...]) -> list[dict]:
    shown = invoke("runs", "show", str(run_id), *common, "--format", "json")
    assert shown.exit_code == 0, shown.output
    return json.loads(shown.stdout)["questions"]  # type: ignore[no-any-return]


def _pairs(figures: dict) -> tuple[list[int], list[int]]:
    """people's and the judge's grades, unrolled from the printed confusion matrix."""
    people, judge = [], []
    for a, row in enumerate(figures["confusion"]):
        for b, n in enumerate(row):
            people += [a] * n
            judge += [b] * n
    return people, judge
