"""Benchmark 9: ``sets lint`` on SciFact against one lexical evaluation run, and near-duplicate
detection at two corpus sizes.

1. Lint vs run (target ≤ 3×): SciFact's 300 test claims over its 5,183 abstracts.
   a. The commands as a user runs them: ``retrieval-eval sets lint scifact.test --retriever
      scifact_bm25`` against ``retrieval-eval run scifact.test scifact_bm25 --no-save``, each a
      new process, with one stored run (so lint's never-found check reads it) and the BM25 index
      in the adapter cache (built before timing, as after a first run). Alternating, best of 3.
   b. In-process: both sides start from the retriever's options (building the lexical
      retriever, its index loaded from the cache) then either ``run_lint`` (dead labels, reading
      the corpus, form honesty, label completeness with the corpus's signatures loaded from the
      same cache, duplicate questions, power) or ``evaluate``. Alternating, best of 5. Context
      rows: the checks alone against the evaluation alone (the retriever already built), and
      both sides with nothing cached (lint signs the corpus, the run builds its index).
2. Near-duplicate growth (target: sub-quadratic): label completeness's near-duplicate search
   (:func:`retrieval_eval.lint.completeness.near_duplicates`, every document a target, the
   worst case) over N and 4N synthetic documents with SciFact's words and lengths, 1 % of them
   planted near-copies. Quadratic work would grow 16×; the row's ratio is the growth exponent
   ``log(t(4N) / t(N)) / log 4`` (1 = linear, 2 = quadratic), target < 1.5.
3. Near-duplicate questions on template-like sets (target: near-linear, bounded memory):
   :func:`retrieval_eval.lint.duplicates.check_duplicates` over 10k / 50k / 200k questions of 8
   words drawn from a 24-word vocabulary, where most questions share LSH buckets; each size in a
   new process, its time and peak resident memory; the ratio column is the growth exponent
   against 10k (target < 1.3).
"""

from __future__ import annotations

import math
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.common import SHARED_DATA, Row, best_times, seconds
from retrieval_eval.evaluation.results import RunSettings
from retrieval_eval.evaluation.scoring import evaluate
from retrieval_eval.golden.importers import import_beir
from retrieval_eval.lint import run_lint
from retrieval_eval.lint.completeness import near_duplicates
from retrieval_eval.retrievers.corpus import Document, read_corpus
from retrieval_eval.retrievers.lexical import LexicalOptions, LexicalRetriever

SIZES = (5_000, 20_000)
TEMPLATE_SIZES = (10_000, 50_000, 200_000)
_TEMPLATE = """
import random, resource, sys, time
from retrieval_eval.config.models import LintOptions
from retrieval_eval.golden.models import GoldenQuestion, GoldenQuestionSet
from retrieval_eval.lint.duplicates import CAPPED_CHECK, check_duplicates
n = int(sys.argv[1])
rng = random.Random(n)
vocab = [f"word{i:02d}" for i in range(24)]
questions = [
    GoldenQuestion(id=f"q{i}", question=" ".join(rng.choices(vocab, k=8)), form="match",
                   expected_document_ids=[f"d{i}"])
    for i in range(n)
]
golden = GoldenQuestionSet(identifier="template.set", questions=questions)
start = time.perf_counter()
found = check_duplicates(golden, LintOptions())
took = time.perf_counter() - start
capped = any(f.check == CAPPED_CHECK for f in found)
# VmHWM, not ru_maxrss: a child's ru_maxrss starts from its parent's peak (fork, then exec)
peak = [line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM:")]
print(took, peak[0] if peak else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, capped)
"""


def _commands(root: str) -> Row:
    exe = str(Path(sys.executable).parent / "retrieval-eval")
    with tempfile.TemporaryDirectory() as folder:
        env = {**os.environ, "RETRIEVAL_EVAL_HOME": os.path.join(folder, "home")}
        env.pop("RETRIEVAL_EVAL_DB", None)
        env["RETRIEVAL_EVAL_CONFIG"] = config = os.path.join(folder, "retrieval_eval.yaml")

        def call(*args: str) -> None:
            subprocess.run([exe, *args], env=env, cwd=folder, check=True, capture_output=True)

        Path(config).write_text(
            f"sets: [scifact.yaml]\nstore: sqlite:///{folder}/results.sqlite\n"
            f"retrievers:\n  scifact_bm25: {{type: lexical, corpus: {root}/corpus.jsonl}}\n"
        )
        call("sets", "import-beir", root, "--output", os.path.join(folder, "scifact.yaml"))
        call("run", "scifact.test", "scifact_bm25")  # the index cached, one stored run
        best = best_times(
            {
                "lint": lambda: call("sets", "lint", "scifact.test", "--retriever", "scifact_bm25"),
                "run": lambda: call("run", "scifact.test", "scifact_bm25", "--no-save"),
            },
            repeat=3,
            budget_s=120,
        )
    ratio = best["lint"] / best["run"]
    return Row(
        "9. sets lint vs run, SciFact 300 (commands)",
        seconds(best["lint"]),
        seconds(best["run"]),
        ratio,
        "≤ 3.00",
        ratio <= 3.0,
        "each a new process; the BM25 index cached, one stored run (never-found reads it)",
    )


def _lint_vs_run(root: str) -> list[Row]:
    corpus = Path(root) / "corpus.jsonl"
    golden = import_beir(root, "test")
    options = LexicalOptions(corpus=corpus)
    built = LexicalRetriever("scifact_bm25", options)  # warms the adapter cache
    report = run_lint(golden, retriever=built)
    dead = [f for f in report.findings if f.check == "dead_labels"]
    if dead or "label_completeness" not in report.checks_run:
        raise AssertionError(f"lint on SciFact: {dead[:3]}, checks {report.checks_run}")
    best = best_times(
        {
            "lint": lambda: run_lint(golden, retriever=LexicalRetriever("scifact_bm25", options)),
            "run": lambda: evaluate(
                golden, LexicalRetriever("scifact_bm25", options), RunSettings()
            ),
            "checks": lambda: run_lint(golden, retriever=built),
            "evaluate": lambda: evaluate(golden, built, RunSettings()),
        },
        repeat=5,
        budget_s=90,
    )
    os.environ["RETRIEVAL_EVAL_CACHE"] = "off"  # nothing cached: lint signs, run indexes
    try:
        cold = best_times(
            {
                "lint": lambda: run_lint(
                    golden, retriever=LexicalRetriever("scifact_bm25", options)
                ),
                "run": lambda: evaluate(
                    golden, LexicalRetriever("scifact_bm25", options), RunSettings()
                ),
            },
            repeat=2,
            budget_s=60,
        )
    finally:
        os.environ.pop("RETRIEVAL_EVAL_CACHE")
    ratio = best["lint"] / best["run"]
    return [
        Row(
            "9. run_lint vs evaluate, nothing cached, SciFact",
            seconds(cold["lint"]),
            seconds(cold["run"]),
            cold["lint"] / cold["run"],
            "–",
            None,
            "RETRIEVAL_EVAL_CACHE=off: lint signs the corpus, the run builds its BM25 index",
        ),
        Row(
            "9. run_lint vs evaluate in-process, SciFact 300",
            seconds(best["lint"]),
            seconds(best["run"]),
            ratio,
            "≤ 3.00",
            ratio <= 3.0,
            "both build the lexical retriever (cached index) first; lint reads the 5,183-document "
            "corpus (its signatures cached) and runs every check but never-found (no store)",
        ),
        Row(
            "9. lint checks vs evaluate alone, SciFact",
            seconds(best["checks"]),
            seconds(best["evaluate"]),
            best["checks"] / best["evaluate"],
            "–",
            None,
            "retriever already built on both sides (context for the row above)",
        ),
    ]


def _synthetic(count: int, words: list[str], lengths: list[int], seed: int) -> list[Document]:
    rng = random.Random(seed)
    docs = [
        Document(f"d{i}", "", " ".join(rng.choices(words, k=rng.choice(lengths))))
        for i in range(count)
    ]
    for k in range(count // 100):  # planted near-copies: one word in 40 changed
        source = docs[rng.randrange(count)].text.split()
        for i in range(0, len(source), 40):
            source[i] = f"changed{k}"
        docs.append(Document(f"copy{k}", "", " ".join(source)))
    return docs


def _growth(root: str) -> Row:
    sample = read_corpus(Path(root) / "corpus.jsonl")
    words = [w for doc in sample[:2000] for w in doc.content.split()]
    lengths = [len(doc.content.split()) for doc in sample]
    corpora = {n: _synthetic(n, words, lengths, seed=n) for n in SIZES}
    found = {n: near_duplicates(docs, {d.id for d in docs}, 0.8) for n, docs in corpora.items()}
    for n, similar in found.items():
        copies = sum(1 for doc_id, near in similar.items() if doc_id.startswith("copy") and near)
        if copies < n // 100 * 0.99:
            raise AssertionError(f"{n} documents: only {copies} planted near-copies found")
    best = best_times(
        {
            n: (lambda docs=docs: near_duplicates(docs, {d.id for d in docs}, 0.8))
            for n, docs in corpora.items()
        },
        repeat=3,
        budget_s=90,
    )
    small, large = SIZES
    exponent = math.log(best[large] / best[small]) / math.log(large / small)
    return Row(
        f"9. near duplicates, {large:,} vs {small:,} documents",
        seconds(best[large]),
        seconds(best[small]),
        exponent,
        "exponent < 1.50",
        exponent < 1.5,
        f"ratio column = growth exponent (1 linear, 2 quadratic); time grew "
        f"{best[large] / best[small]:.1f}x for 4x the documents; every planted near-copy found",
    )


def _template_growth() -> list[Row]:
    measured: dict[int, tuple[float, int, bool]] = {}
    for n in TEMPLATE_SIZES:
        done = subprocess.run(
            [sys.executable, "-c", _TEMPLATE, str(n)], check=True, capture_output=True, text=True
        )
        took, rss_kib, capped = done.stdout.split()
        measured[n] = (float(took), int(rss_kib), capped == "True")
    first = TEMPLATE_SIZES[0]
    rows = []
    for n, (took, rss_kib, capped) in measured.items():
        exponent = math.log(took / measured[first][0]) / math.log(n / first) if n != first else None
        rows.append(
            Row(
                f"9. near-duplicate questions, {n:,} template-like",
                seconds(took),
                f"{rss_kib / 1024:.0f} MiB peak",
                exponent,
                "exponent < 1.30" if exponent is not None else "–",
                None if exponent is None else exponent < 1.3,
                "8 words from a 24-word vocabulary; ratio = growth exponent against "
                f"{first:,}; the search {'was' if capped else 'was not'} capped (said in lint)",
            )
        )
    return rows


def run() -> list[Row]:
    root = os.path.join(SHARED_DATA, "scifact")
    if not os.path.isfile(os.path.join(root, "queries.jsonl")):
        note = f"{root} is absent"
        absent = Row("9. sets lint vs one lexical run", "–", "–", None, "≤ 3.00", None, note)
        return [absent, *_template_growth()]
    return [_commands(root), *_lint_vs_run(root), _growth(root), *_template_growth()]
