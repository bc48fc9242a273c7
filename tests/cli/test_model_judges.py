"""``sets judge auto`` and ``sets judge calibrate`` against a REAL OpenAI-compatible server on
127.0.0.1 (tests/servers/judge_server.py) whose answers come from a seeded simulated judge with
a known confusion matrix, plus 429s, a slow answer past the deadline and unreadable answers.

Checked: κ, its confusion matrix and Kendall's τ printed by the CLI equal those computed here
from the simulation; the cache makes a second run ask nothing it asked before; the cost cap and
--max-pairs stop with exit 1 keeping what was judged; machine grades count as judged only once a
calibration passed; the key is in no output, no store row and no error.
"""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path

import pytest
import yaml
from servers.judge_server import COMPLETION_TOKENS, PROMPT_TOKENS, JudgeBehaviour, start
from statsmodels.stats.inter_rater import cohens_kappa

from cli.test_cli_core import invoke, isolate_env
from retrieval_eval.labels.calibration import hit_rate, ranking_tau
from retrieval_eval.labels.judged import judged_pairs
from retrieval_eval.store import open_store

SET = "sim.set"
KEY = "sk-test-7f3a9c21e8b44d0aa6"
QUESTIONS = 40
DOCS = 6  # candidates per question
# the simulated judge: P(judge's grade | people's grade), rows 0-3
CONFUSION = [
    [0.80, 0.15, 0.05, 0.00],
    [0.20, 0.55, 0.20, 0.05],
    [0.05, 0.20, 0.55, 0.20],
    [0.00, 0.05, 0.20, 0.75],
]
RETRIEVERS = 4


def _simulate(seed: int = 7) -> dict[str, object]:
    rng = random.Random(seed)
    truth: dict[tuple[str, str], int] = {}
    judged: dict[tuple[str, str], int] = {}
    text: dict[tuple[str, str], str] = {}
    for q in range(QUESTIONS):
        for d in range(DOCS):
            pair = (f"q{q}", f"d{q}-{d}")
            truth[pair] = rng.choices(range(4), weights=[4, 2, 2, 1])[0]
            judged[pair] = rng.choices(range(4), weights=CONFUSION[truth[pair]])[0]
            text[pair] = f"Passage {q}-{d}: words about topic {q} and facet {d}."
    return {"truth": truth, "judged": judged, "text": text}


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    isolate_env(monkeypatch, tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SIM_JUDGE_KEY", KEY)
    sim = _simulate()
    truth, judged, text = sim["truth"], sim["judged"], sim["text"]
    behaviour = JudgeBehaviour(key=KEY, grades={text[p]: g for p, g in judged.items()})
    pairs = [p for p in sorted(truth) if not p[1].endswith("-0")]  # doc 0: the set's target
    unreadable = {text[p] for p in pairs[5:8]}
    behaviour.unreadable = unreadable
    behaviour.limited = {text[pairs[10]]: 2, text[pairs[11]]: 1}
    behaviour.slow = {text[pairs[12]]: 5.0}
    server, base_url = start(behaviour)
    # the set: each question's doc 0 is its labelled target (people's label, grade 3)
    questions = [
        {
            "id": f"q{q}",
            "question": f"What about topic {q}?",
            "form": "match",
            "expected_document_ids": [f"d{q}-0"],
        }
        for q in range(QUESTIONS)
    ]
    for q in range(QUESTIONS):
        truth[(f"q{q}", f"d{q}-0")] = 3
    (tmp_path / "set.yaml").write_text(
        yaml.safe_dump({"identifier": SET, "questions": questions}), encoding="utf-8"
    )
    # retrievers: run files ranking the candidates in seeded orders
    rng = random.Random(11)
    rankings: dict[str, dict[str, list[str]]] = {}
    retrievers = {}
    for r in range(RETRIEVERS):
        name = f"r{r}"
        rankings[name] = {}
        lines = []
        for q in range(QUESTIONS):
            docs = [f"d{q}-{d}" for d in range(DOCS)]
            rng.shuffle(docs)
            docs = docs[: 2 + r]  # deeper retrievers find more
            rankings[name][f"q{q}"] = docs
            lines.append(json.dumps({"question_id": f"q{q}", "ranking": docs}))
        (tmp_path / f"{name}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        retrievers[name] = {"type": "run_file", "path": f"{name}.jsonl"}
    config = {
        "sets": ["set.yaml"],
        "retrievers": retrievers,
        "run": {"cutoffs": [1, 3, 10]},
        "judges": {
            "sim": {
                "type": "openai",
                "model": "sim-1",
                "base_url": base_url,
                "api_key_from_env": "SIM_JUDGE_KEY",
                "max_concurrency": 4,
                "input_price_per_1k": 0.5,
                "output_price_per_1k": 2.0,
                "timeout_s": 1.5,
                "deadline_s": 3.0,
                "backoff_s": 0.05,
            }
        },
    }
    (tmp_path / "retrieval_eval.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    # the pool: every pair but the set's targets, unjudged, with its text
    pool = [
        {"question_id": q, "document_id": d, "text": text[(q, d)], "source": "sim"}
        for q, d in pairs
        if not d.endswith("-0")
    ]
    (tmp_path / "pool.jsonl").write_text("".join(json.dumps(r) + "\n" for r in pool))
    yield {
        "home": tmp_path,
        "truth": truth,
        "judged": judged,
        "text": text,
        "pool": pool,
        "behaviour": behaviour,
        "unreadable": unreadable,
        "slow": pairs[12],
        "rankings": rankings,
        "config": str(tmp_path / "retrieval_eval.yaml"),
    }
    server.shutdown()
    server.server_close()


def _no_key(world: dict, *texts: str) -> None:
    for t in texts:
        assert KEY not in t
    store_bytes = (world["home"] / "results.sqlite").read_bytes()
    assert KEY.encode() not in store_bytes


def test_judge_auto_stores_machine_judgments_and_the_cache_spares_a_second_run(world) -> None:
    cfg = world["config"]
    result = invoke(
        "sets", "judge", "auto", SET, "--judge", "sim", "--pool", "pool.jsonl", "--config", cfg
    )
    assert result.exit_code == 0, result.output
    pool = world["pool"]
    behaviour: JudgeBehaviour = world["behaviour"]
    first = behaviour.requests
    # every pool pair asked at least once; the 429'd ones again; the slow one until its deadline
    assert first >= len(pool) + 3
    assert f"{len(pool)} pair(s): 0 from the cache, {len(pool)} asked" in result.output
    readable = len(pool) - len(world["unreadable"]) - 1
    assert f"{readable} graded, {len(world['unreadable']) + 1} unjudged" in result.output
    assert "unjudged: 1: no answer within the deadline of 3 s" in result.output
    assert "unjudged: 3: unreadable answer" in result.output
    cost = (len(pool) - 1) * (PROMPT_TOKENS / 1000 * 0.5 + COMPLETION_TOKENS / 1000 * 2.0)
    assert f"cost ${cost:.4f}" in result.output
    assert "so far" in result.stderr

    with open_store(f"sqlite:///{world['home'] / 'results.sqlite'}") as store:
        rows = store.judgments.read(SET, gated=False, skips=True)
        gated = store.judgments.read(SET)
    machine = {(r.question_key, r.document_id): r.grade for r in rows if r.rater == "judge:sim"}
    expected = {
        (q["question_id"], q["document_id"]): world["judged"][(q["question_id"], q["document_id"])]
        for q in pool
        if q["text"] not in world["unreadable"]
        and (q["question_id"], q["document_id"]) != world["slow"]
    }
    assert {p: g for p, g in machine.items() if g is not None} == expected
    unread = [r for r in rows if r.grade is None]
    assert len(unread) == 3 and all("unreadable answer" in (r.note or "") for r in unread)
    assert gated == []  # not calibrated: the judge's grades are candidates, not judged
    assert judged_pairs(rows=gated) == set()

    before = dict(behaviour.asked)
    again = invoke(
        "sets", "judge", "auto", SET, "--judge", "sim", "--pool", "pool.jsonl", "--config", cfg
    )
    assert again.exit_code == 0, again.output
    slow_text = world["text"][world["slow"]]
    after = dict(behaviour.asked)
    # only the pair that never answered in time is asked again: the rest come from the cache
    assert {t: n for t, n in after.items() if t != slow_text} == {
        t: n for t, n in before.items() if t != slow_text
    }
    assert after[slow_text] > before[slow_text]
    assert f"{len(pool) - 1} from the cache, 1 asked" in again.output
    assert "0 judgment(s) stored" in again.output
    _no_key(world, result.output, result.stderr, again.output)


def test_max_pairs_and_the_cost_cap_stop_with_exit_1_keeping_what_was_judged(world) -> None:
    cfg = world["config"]
    result = invoke(
        "sets",
        "judge",
        "auto",
        SET,
        "--judge",
        "sim",
        "--pool",
        "pool.jsonl",
        "--max-pairs",
        "20",
        "--config",
        cfg,
    )
    assert result.exit_code == 1, result.output
    assert "--max-pairs 20 was reached" in result.output
    with open_store(f"sqlite:///{world['home'] / 'results.sqlite'}") as store:
        kept = [r for r in store.judgments.read(SET, gated=False, skips=True)]
    assert len(kept) == 19  # the first 20 asked, less the slow one that never answered in time

    config = yaml.safe_load(Path(cfg).read_text())
    config["judges"]["sim"]["max_cost_usd"] = 0.01  # each answer costs $0.11
    Path(cfg).write_text(yaml.safe_dump(config))
    capped = invoke(
        "sets", "judge", "auto", SET, "--judge", "sim", "--pool", "pool.jsonl", "--config", cfg
    )
    assert capped.exit_code == 1, capped.output
    assert "the cost cap of $0.01 was reached" in capped.output
    # the 19 answers cached; the first answer's cost stops it, the 4 sent at once are kept
    assert "19 from the cache, 4 asked" in capped.output


def test_a_refused_key_is_exit_3_and_never_shown(world, monkeypatch: pytest.MonkeyPatch) -> None:
    wrong = "sk-wrong-91c0e5b7aa2f44"
    monkeypatch.setenv("SIM_JUDGE_KEY", wrong)
    result = invoke(
        "sets",
        "judge",
        "auto",
        SET,
        "--judge",
        "sim",
        "--pool",
        "pool.jsonl",
        "--config",
        world["config"],
    )
    assert result.exit_code == 3, result.output
    assert "HTTP 401" in result.output and "check the key" in result.output
    assert wrong not in result.output and wrong not in (result.stderr or "")


def test_calibrate_measures_kappa_and_tau_as_the_simulation_does_and_opens_the_gate(world) -> None:
    cfg = world["config"]
    home: Path = world["home"]
    truth, judged = world["truth"], world["judged"]
    for r in range(RETRIEVERS):
        run = invoke("run", SET, f"r{r}", "--config", cfg)
        assert run.exit_code in (0, 1), run.output
    assert (
        invoke(
            "sets", "judge", "auto", SET, "--judge", "sim", "--pool", "pool.jsonl", "--config", cfg
        ).exit_code
        == 0
    )
    pool_args = ("sets", "pool", SET, "--retrievers", "r0,r1,r2,r3", "--depth", "10")
    pool_args += ("--no-lint", "--no-texts", "--config", cfg)
    before = invoke(*pool_args)
    assert before.exit_code == 0, before.output
    offered_before = {
        (r["question_id"], r["document_id"]) for r in map(json.loads, before.stdout.splitlines())
    }
    # people graded a sample of the pool (their file keeps the texts)
    rng = random.Random(3)
    graded = rng.sample([p for p in world["pool"]], 150)
    people = [
        {**row, "grade": truth[(row["question_id"], row["document_id"])], "rater": "ann"}
        for row in graded
    ]
    (home / "people.jsonl").write_text("".join(json.dumps(r) + "\n" for r in people))

    result = invoke(
        "sets",
        "judge",
        "calibrate",
        SET,
        "--judge",
        "sim",
        "--judgments",
        "people.jsonl",
        "--sample",
        "1000",
        "--json",
        "--config",
        cfg,
    )
    assert result.exit_code == 0, result.output
    figures = json.loads(result.stdout)

    # what the simulation says, computed here: people's pairs the judge could read
    readable = [
        (row["question_id"], row["document_id"])
        for row in graded
        if row["text"] not in world["unreadable"]
        and (row["question_id"], row["document_id"]) != world["slow"]
    ]
    # the set's targets are people's labels too (grade 3), shown to the judge only with a text
    table = [[0] * 4 for _ in range(4)]
    for pair in readable:
        table[truth[pair]][judged[pair]] += 1
    assert figures["confusion"] == table
    kappa = cohens_kappa(table, wt="quadratic").kappa
    assert figures["kappa"] == pytest.approx(kappa, abs=1e-9)
    assert figures["kappa_low"] < figures["kappa"] < figures["kappa_high"]
    assert figures["pairs"] == len(readable)

    # τ: people's labels (targets + their grades) against the judge's wherever it graded
    people_grades = {(q, d): 3 for (q, d) in truth if d.endswith("-0")}
    people_grades.update({(r["question_id"], r["document_id"]): r["grade"] for r in people})
    machine = dict(people_grades)
    machine.update(
        {
            (r["question_id"], r["document_id"]): judged[(r["question_id"], r["document_id"])]
            for r in world["pool"]
            if r["text"] not in world["unreadable"]
            and (r["question_id"], r["document_id"]) != world["slow"]
        }
    )
    rates_people = {n: hit_rate(rk, people_grades, 10) for n, rk in world["rankings"].items()}
    rates_judge = {n: hit_rate(rk, machine, 10) for n, rk in world["rankings"].items()}
    assert {n: r["people"] for n, r in figures["rates"].items()} == pytest.approx(rates_people)
    assert {n: r["judge"] for n, r in figures["rates"].items()} == pytest.approx(rates_judge)
    from scipy.stats import kendalltau

    names = sorted(rates_people)
    tau = kendalltau([rates_people[n] for n in names], [rates_judge[n] for n in names]).statistic
    assert figures["tau"] == pytest.approx(tau)
    assert figures["tau"] == pytest.approx(ranking_tau(rates_people, rates_judge))

    assert kappa >= 0.6 and figures["passed"] is True
    with open_store(f"sqlite:///{home / 'results.sqlite'}") as store:
        gated = store.judgments.read(SET)
    assert any(r.rater == "judge:sim" for r in gated)  # the gate is open now
    after = invoke(*pool_args)
    offered_after = {
        (r["question_id"], r["document_id"]) for r in map(json.loads, after.stdout.splitlines())
    }
    unanswered = {
        (r["question_id"], r["document_id"])
        for r in world["pool"]
        if r["text"] in world["unreadable"] or (r["question_id"], r["document_id"]) == world["slow"]
    }
    # before: every retrieved pair but the targets; after: only what neither people nor the
    # calibrated judge graded
    assert offered_after == {p for p in offered_before if p in unanswered}
    assert len(offered_before) > len(offered_after)

    text_out = invoke(
        "sets",
        "judge",
        "calibrate",
        SET,
        "--judge",
        "sim",
        "--judgments",
        "people.jsonl",
        "--sample",
        "1000",
        "--config",
        cfg,
    )
    assert text_out.exit_code == 0, text_out.output
    assert f"Cohen's κ (quadratic): {kappa:.3f}" in text_out.output
    assert "gate: κ ≥ 0.6: passed" in text_out.output
    _no_key(world, result.output, text_out.output)


def test_a_calibration_below_min_kappa_keeps_the_gate_shut(world) -> None:
    cfg = world["config"]
    config = yaml.safe_load(Path(cfg).read_text())
    config["judges"]["sim"]["min_kappa"] = 0.99
    Path(cfg).write_text(yaml.safe_dump(config))
    assert (
        invoke(
            "sets", "judge", "auto", SET, "--judge", "sim", "--pool", "pool.jsonl", "--config", cfg
        ).exit_code
        == 0
    )
    people = [
        {**row, "grade": world["truth"][(row["question_id"], row["document_id"])], "rater": "ann"}
        for row in world["pool"][:60]
    ]
    (world["home"] / "people.jsonl").write_text("".join(json.dumps(r) + "\n" for r in people))
    result = invoke(
        "sets",
        "judge",
        "calibrate",
        SET,
        "--judge",
        "sim",
        "--judgments",
        "people.jsonl",
        "--config",
        cfg,
    )
    assert result.exit_code == 1, result.output
    assert "gate: κ ≥ 0.99: failed: its grades stay candidates for people" in result.output
    with open_store(f"sqlite:///{world['home'] / 'results.sqlite'}") as store:
        assert not any(r.rater == "judge:sim" for r in store.judgments.read(SET))
    db = sqlite3.connect(world["home"] / "results.sqlite")
    (passed,) = db.execute("SELECT passed FROM judge_calibration").fetchone()
    assert passed == 0


def test_the_key_from_an_airflow_connection_whose_host_is_the_endpoint(
    world, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("airflow.sdk")
    cfg = world["config"]
    config = yaml.safe_load(Path(cfg).read_text())
    spec = config["judges"]["sim"]
    base_url = spec.pop("base_url")
    spec.pop("api_key_from_env")
    spec["connection_id"] = "sim_judge"
    Path(cfg).write_text(yaml.safe_dump(config))
    monkeypatch.delenv("SIM_JUDGE_KEY")
    connection = {"conn_type": "generic", "host": base_url, "password": KEY}
    monkeypatch.setenv("AIRFLOW_CONN_SIM_JUDGE", json.dumps(connection))
    result = invoke("sets", "judge", "auto", SET, "--judge", "sim", "--pool", "pool.jsonl", "--max-pairs", "4", "--config", cfg)  # fmt: skip
    assert result.exit_code == 1, result.output  # stopped by --max-pairs, after 4 answers
    assert "4 asked" in result.output and world["behaviour"].requests >= 4
    _no_key(world, result.output, result.stderr)
