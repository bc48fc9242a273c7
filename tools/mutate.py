#!/usr/bin/env python3
"""Targeted mutation check: break one rule at a time and see whether its tests notice.

Each mutation replaces one exact snippet of one file (it must occur exactly once, so a mutation
that no longer matches the code is reported instead of silently skipped) and runs only the test
files that guard that rule, with ``pytest -x -q``. A mutation is KILLED when those tests fail and
SURVIVES when they pass. The mutations cover the scoring rules, aggregation, the regression
thresholds, baseline selection, atomic saving, the golden-set rules and the dashboard's
escaping.

Everything happens in a throwaway copy of the working tree (tracked files plus untracked ones git
does not ignore) in a temporary folder, imported through ``PYTHONPATH``: the live checkout is
never modified, also when the check is interrupted. ``--rev REV`` copies a commit instead.

Exit status: 0 when every must-kill mutation is killed, 1 when one survives, 2 when the check
could not run (a stale snippet, tests failing before any mutation).

    make mutate                                  # everything (about 4-5 minutes on 2 cores)
    .venv/bin/python tools/mutate.py --area webui  # one area; --only NAME [NAME ...], --list
    .venv/bin/python tools/mutate.py --jobs 1      # one mutation at a time (default: 2)
"""

from __future__ import annotations

import argparse
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from subprocess import PIPE

ROOT = Path(__file__).resolve().parent.parent

SCORING_TESTS = ("tests/evaluation/test_scoring.py",)
RESULTS_TESTS = ("tests/evaluation/test_results.py",)
GOLDEN_TESTS = ("tests/golden/test_models.py", "tests/golden/test_loaders.py")
REGRESSION_TESTS = ("tests/verdicts/test_regression.py",)
DEPTH_TESTS = ("tests/verdicts/test_regression_depths.py",)
STORE_TESTS = ("tests/store/test_store.py", "tests/store/test_baseline.py")
BASELINE_TESTS = ("tests/store/test_baseline.py", "tests/store/test_store.py")
WEB_TESTS = ("tests/webui/test_escaping.py",)
CHART_TESTS = ("tests/webui/test_escaping.py", "tests/webui/test_charts.py")

SCORING = "retrieval_eval/evaluation/scoring.py"
RANKING = "retrieval_eval/retrievers/ranking.py"
RESULTS = "retrieval_eval/evaluation/results.py"
GOLDEN_MODELS = "retrieval_eval/golden/models.py"
AGGREGATE = "retrieval_eval/evaluation/aggregate.py"
REGRESSION = "retrieval_eval/verdicts/regression.py"
VERDICTS = "retrieval_eval/verdicts/models.py"
SIGNIFICANCE = "retrieval_eval/verdicts/significance.py"
CONFIG_MODELS = "retrieval_eval/config/models.py"
RUNS = "retrieval_eval/store/runs.py"
RECORDING = "retrieval_eval/workflows/recording.py"
TEMPLATES = "retrieval_eval/webui/templates/"


@dataclass(frozen=True)
class Mutation:
    name: str
    area: str
    file: str
    original: str
    replacement: str
    tests: tuple[str, ...]
    must_kill: bool = True


def _safe(name: str, template: str, expression: str, around: str = "@") -> Mutation:
    """``{{ expression }}`` rendered with ``| safe``: stored markup would reach the page raw.

    ``around`` is the snippet with ``@`` where the expression goes, for one that occurs twice.
    """
    plain, marked = f"{{{{ {expression} }}}}", f"{{{{ ({expression}) | safe }}}}"
    original, replacement = around.replace("@", plain), around.replace("@", marked)
    return Mutation(name, "webui", TEMPLATES + template, original, replacement, WEB_TESTS)


def _without(
    name: str, area: str, file: str, snippet: str, tests: tuple[str, ...], **kw: bool
) -> Mutation:
    return Mutation(name, area, file, snippet, "", tests, **kw)


MUTATIONS: list[Mutation] = [
    # -- scoring: overfetch ×4, collapse to first occurrences, no-target rule, errors miss ------
    Mutation(
        "overfetch-x1",
        "scoring",
        RESULTS,
        "OVERFETCH_MULTIPLIER = 4",
        "OVERFETCH_MULTIPLIER = 1",
        SCORING_TESTS,
    ),
    Mutation(
        "fetch-limit-without-overfetch",
        "scoring",
        RESULTS,
        "return self.depth * self.overfetch_multiplier",
        "return self.depth",
        SCORING_TESTS,
    ),
    Mutation(
        "duplicates-kept",
        "scoring",
        SCORING,
        "    distinct = list(seen)\n",
        "    distinct = [d for d in ranking or () if d] if error is None else []\n",
        SCORING_TESTS,
    ),
    Mutation(
        "duplicates-collapse-to-last-occurrence",
        "scoring",
        SCORING,
        "seen = dict.fromkeys(ranking) if error is None and ranking else {}",
        "seen = dict.fromkeys(list(dict.fromkeys(ranking[::-1]))[::-1]) if error is None and ranking else {}",
        SCORING_TESTS,
    ),
    _without(
        "score-keeps-empty-ids", "scoring", SCORING, '    seen.pop("", None)\n', SCORING_TESTS
    ),
    _without(
        "collapse-keeps-empty-ids",
        "scoring",
        RANKING,
        '    distinct.pop("", None)\n',
        SCORING_TESTS,
    ),
    Mutation(
        "no-target-question-always-hit",
        "scoring",
        SCORING,
        "top1 = top3 = not distinct",
        "top1 = top3 = True",
        SCORING_TESTS,
    ),
    Mutation(
        "no-target-question-never-hit",
        "scoring",
        SCORING,
        "top1 = top3 = not distinct",
        "top1 = top3 = False",
        SCORING_TESTS,
    ),
    Mutation(
        "errors-are-not-misses",
        "scoring",
        SCORING,
        "    if error is not None:\n        top1 = top3 = False\n",
        "    if False:\n        top1 = top3 = False\n",
        SCORING_TESTS,
    ),
    Mutation(
        "top3-is-top2",
        "scoring",
        SCORING,
        "first_rank is not None and first_rank <= 3",
        "first_rank is not None and first_rank <= 2",
        SCORING_TESTS,
    ),
    Mutation(
        "top1-is-any-of-top3",
        "scoring",
        SCORING,
        "top1 = first_rank == 1",
        "top1 = first_rank is not None and first_rank <= 3",
        SCORING_TESTS,
    ),
    # -- results: aggregation ------------------------------------------------------------------
    Mutation(
        "errors-not-counted",
        "results",
        AGGREGATE,
        "errors = count - error_col.count(None)",
        "errors = 0",
        RESULTS_TESTS,
        must_kill=False,
    ),
    Mutation(
        "max-error-rate-exclusive",
        "results",
        AGGREGATE,
        "<= settings.max_error_rate",
        "< settings.max_error_rate",
        RESULTS_TESTS,
        must_kill=False,
    ),
    Mutation(
        "empty-group-rate-zero",
        "results",
        AGGREGATE,
        "return hits / count if count else None",
        "return hits / count if count else 0.0",
        RESULTS_TESTS,
        must_kill=False,
    ),
    Mutation(
        "latency-includes-errored-calls",
        "results",
        AGGREGATE,
        "if error is None and ms is not None and ms == ms",
        "if ms is not None and ms == ms",
        RESULTS_TESTS,
        must_kill=False,
    ),
    Mutation(
        "p95-is-p90",
        "results",
        AGGREGATE,
        "np.percentile(ok, [50, 95])",
        "np.percentile(ok, [50, 90])",
        RESULTS_TESTS,
        must_kill=False,
    ),
    Mutation(
        "forms-listed-only-when-present",
        "results",
        AGGREGATE,
        "for value in [*always, *sorted(v for v in counts if v not in always)]:",
        "for value in counts:",
        RESULTS_TESTS,
        must_kill=False,
    ),
    Mutation(
        "top3-counts-top1-hits",
        "results",
        AGGREGATE,
        "top3 = int(sum(top3_col))",
        "top3 = int(sum(top1_col))",
        RESULTS_TESTS,
        must_kill=False,
    ),
    Mutation(
        "metric-recall-below-the-cutoff",
        "results",
        "retrieval_eval/evaluation/metrics.py",
        "found = j.gains[:, :k].sum(axis=1)",
        "found = j.gains[:, : k - 1].sum(axis=1)",
        ("tests/evaluation/test_metrics.py",),
    ),
    Mutation(
        "metric-target-at-the-last-kept-rank-dropped",
        "results",
        "retrieval_eval/evaluation/metrics.py",
        "found = np.flatnonzero((first_rank >= 1) & (first_rank <= kept))",
        "found = np.flatnonzero((first_rank >= 1) & (first_rank < kept))",
        ("tests/evaluation/test_metrics.py",),
    ),
    Mutation(
        "metric-later-targets-not-counted",
        "results",
        "retrieval_eval/evaluation/metrics.py",
        "gains[i, j] = row[j] in wanted",
        "gains[i, j] = False",
        ("tests/evaluation/test_metrics.py",),
    ),
    Mutation(
        "metric-errors-hit",
        "results",
        "retrieval_eval/evaluation/metrics.py",
        "hits = np.where(j.has_targets, found, j.empty) & ~j.failed",
        "hits = np.where(j.has_targets, found, j.empty)",
        ("tests/evaluation/test_metrics.py",),
    ),
    # -- regression: thresholds, slices, flips ---------------------------------------------------
    Mutation(
        "drop-at-threshold-regresses",
        "regression",
        REGRESSION,
        "-delta - threshold > _EPS",
        "-delta - threshold >= -_EPS",
        REGRESSION_TESTS,
        must_kill=False,
    ),
    Mutation(
        "no-float-tolerance",
        "regression",
        REGRESSION,
        "-delta - threshold > _EPS",
        "-delta - threshold > 0",
        REGRESSION_TESTS,
        must_kill=False,
    ),
    Mutation(
        "top3-judged-on-top1-threshold",
        "regression",
        CONFIG_MODELS,
        "            return self.max_top3_drop",
        "            return self.max_top1_drop",
        REGRESSION_TESTS,
        must_kill=False,
    ),
    Mutation(
        "deep-depth-threshold-ignored",
        "regression",
        CONFIG_MODELS,
        "return self.max_drops.get(depth, MAX_DROP)",
        "return MAX_DROP",
        DEPTH_TESTS,
    ),
    Mutation(
        "no-holm-across-depths",
        "regression",
        VERDICTS,
        "adjusted = holm([changes[d].p_value or 1.0 for d in compared])",
        "adjusted = [changes[d].p_value or 1.0 for d in compared]",
        DEPTH_TESTS,
    ),
    Mutation(
        "small-slices-judged",
        "regression",
        REGRESSION,
        "if size < thresholds.min_slice_questions:",
        "if size < 1:",
        REGRESSION_TESTS,
        must_kill=False,
    ),
    Mutation(
        "slice-size-from-the-larger-run",
        "regression",
        REGRESSION,
        "min(cur.questions, old.questions)",
        "max(cur.questions, old.questions)",
        REGRESSION_TESTS,
        must_kill=False,
    ),
    Mutation(
        "new-questions-flip-to-miss",
        "regression",
        REGRESSION,
        "if before.get(qid) is True and not hit]",
        "if before.get(qid) is not False and not hit]",
        REGRESSION_TESTS,
        must_kill=False,
    ),
    Mutation(
        "mcnemar-one-sided",
        "regression",
        SIGNIFICANCE,
        "min(Fraction(1), 2 * Fraction(total, 2**n))",
        "min(Fraction(1), Fraction(total, 2**n))",
        REGRESSION_TESTS,
        must_kill=False,
    ),
    Mutation(
        "latency-check-always-on",
        "regression",
        REGRESSION,
        "slow = limit is not None and ratio is not None and ratio - limit > _EPS",
        "slow = ratio is not None and ratio - (limit or 0) > _EPS",
        REGRESSION_TESTS,
        must_kill=False,
    ),
    # -- baseline rules: which run a run is compared with ---------------------------------------
    Mutation(
        "invalid-run-compared",
        "baseline",
        REGRESSION,
        "    if not current.valid:\n",
        "    if False:\n",
        REGRESSION_TESTS,
    ),
    Mutation(
        "other-set-compared",
        "baseline",
        REGRESSION,
        "if old.set_identifier != current.set_identifier:",
        "if False:",
        REGRESSION_TESTS,
    ),
    Mutation(
        "other-labels-compared",
        "baseline",
        REGRESSION,
        "elif old.labels_fingerprint != current.labels_fingerprint:",
        "elif False:",
        REGRESSION_TESTS,
    ),
    Mutation(
        "invalid-pinned-baseline-compared",
        "baseline",
        REGRESSION,
        'elif baseline.status != "valid":',
        "elif False:",
        REGRESSION_TESTS + BASELINE_TESTS,
    ),
    _without(
        "find-baseline-ignores-labels",
        "baseline",
        RUNS,
        "        .where(eval_result.c.labels_fingerprint == fingerprint)\n",
        BASELINE_TESTS,
    ),
    Mutation(
        "invalid-run-as-baseline",
        "baseline",
        RUNS,
        '        .where(eval_result.c.status == "valid")\n        .where(\n',
        "        .where(\n",
        BASELINE_TESTS,
    ),
    Mutation(
        "regression-as-baseline",
        "baseline",
        RUNS,
        "eval_result.c.is_regression == false(),",
        "eval_result.c.is_regression == eval_result.c.is_regression,",
        BASELINE_TESTS,
    ),
    _without(
        "accepted-regression-not-a-baseline",
        "baseline",
        RUNS,
        "                eval_result.c.accepted_baseline == true(),\n",
        BASELINE_TESTS,
    ),
    Mutation(
        "oldest-run-as-baseline",
        "baseline",
        RUNS,
        "        .order_by(*_NEWEST)\n        .limit(1)",
        "        .order_by(eval_result.c.run_date, eval_result.c.id)\n        .limit(1)",
        BASELINE_TESTS,
    ),
    Mutation(
        "later-run-as-baseline-of-a-replay",
        "baseline",
        RECORDING,
        "GRADER, before=result.finished_at, conn=conn",
        "GRADER, before=None, conn=conn",
        BASELINE_TESTS,
    ),
    Mutation(
        "pinned-baseline-ignored",
        "baseline",
        RECORDING,
        "        if baseline_run_id is not None:\n            baseline = runs.get(",
        "        if False:\n            baseline = runs.get(",
        BASELINE_TESTS,
    ),
    Mutation(
        "label-change-judged-as-first-run",
        "baseline",
        RECORDING,
        "comparable = not fingerprints - {result.labels_fingerprint}",
        "comparable = True",
        BASELINE_TESTS,
    ),
    # -- store: atomic saving, pruning -----------------------------------------------------------
    Mutation(
        "children-saved-in-a-second-transaction",
        "store",
        RUNS,
        "    run_id = inserted_id(conn, eval_result, result_row(result, verdict))\n",
        "    run_id = inserted_id(conn, eval_result, result_row(result, verdict))\n"
        "    conn.commit()\n",
        STORE_TESTS,
    ),
    Mutation(
        "slices-saved-in-a-second-transaction",
        "store",
        RUNS,
        "    slices = slice_rows(result, run_id)\n",
        "    conn.commit()\n    slices = slice_rows(result, run_id)\n",
        STORE_TESTS,
    ),
    Mutation(
        "prune-deletes-the-baseline",
        "store",
        RUNS,
        "                if baseline_id is not None:\n                    protected.add(baseline_id)",
        "                if False:\n                    protected.add(baseline_id)",
        STORE_TESTS,
        must_kill=False,
    ),
    # -- golden sets: the question and set rules (pydantic-core constraints, and the checks it
    # cannot express) ---------------------------------------------------------------------------
    Mutation(
        "golden-ids-unstripped",
        "golden",
        GOLDEN_MODELS,
        'str, StringConstraints(strip_whitespace=True, min_length=1, pattern=f"^[^{_CONTROL}]*$")',
        'str, StringConstraints(strip_whitespace=False, min_length=1, pattern=f"^[^{_CONTROL}]*$")',
        GOLDEN_TESTS,
    ),
    Mutation(
        "golden-ids-control-characters",
        "golden",
        GOLDEN_MODELS,
        'str, StringConstraints(strip_whitespace=True, min_length=1, pattern=f"^[^{_CONTROL}]*$")',
        "str, StringConstraints(strip_whitespace=True, min_length=1)",
        GOLDEN_TESTS,
    ),
    Mutation(
        "golden-text-lone-surrogate",
        "golden",
        GOLDEN_MODELS,
        "Text = Annotated[str, StringConstraints(min_length=0, pattern=_NO_NUL)]",
        "Text = str",
        ("tests/safety/test_surrogates.py",),
    ),
    Mutation(
        "golden-text-nul",
        "golden",
        GOLDEN_MODELS,
        '_NO_NUL = r"^[^\\x00]*$"',
        '_NO_NUL = r"^[\\s\\S]*$"',
        ("tests/safety/test_surrogates.py",),
    ),
    Mutation(
        "golden-document-id-twice",
        "golden",
        GOLDEN_MODELS,
        "    ids: tuple[str, ...] = handler(value)\n    twice = _twice(ids)\n",
        "    ids: tuple[str, ...] = handler(value)\n    twice = None\n",
        GOLDEN_TESTS,
    ),
    Mutation(
        "golden-set-question-id-twice",
        "golden",
        GOLDEN_MODELS,
        "twice = _twice(tuple(question.id for question in golden_set.questions))",
        "twice = None",
        GOLDEN_TESTS,
    ),
    Mutation(
        "golden-file-question-id-twice",
        "golden",
        "retrieval_eval/golden/loaders.py",
        "return questions if len({question.id for question in questions}) == len(questions) else None",
        "return questions",
        GOLDEN_TESTS,
    ),
    # -- webui: every stored string escaped ------------------------------------------------------
    # ids are written by pages.breakable (a <wbr> after each "/" of a long one): escaped both ways
    Mutation(
        "breakable-long-raw",
        "webui",
        "retrieval_eval/webui/pages.py",
        'Markup("/<wbr>").join(escape(part) for part in text.split("/"))',
        'Markup("/<wbr>").join(Markup(part) for part in text.split("/"))',
        WEB_TESTS,
    ),
    Mutation(
        "breakable-short-raw",
        "webui",
        "retrieval_eval/webui/pages.py",
        "        return escape(text)\n",
        "        return Markup(text)\n",
        WEB_TESTS,
    ),
    Mutation(
        "autoescape-off",
        "webui",
        "retrieval_eval/webui/rendering.py",
        'autoescape=select_autoescape(["html", "css"], default=True)',
        "autoescape=False",
        WEB_TESTS,
    ),
    _safe("question-text", "run.html", "q.question"),
    _safe("question-id-attribute", "run.html", "q.id", '<tr data-question-id="@" class='),
    _safe("question-error-text", "run.html", "q.error or ''"),
    _safe("question-hard-class", "run.html", "q.hard_class or ''"),
    _safe("slice-value", "run.html", "value", '<td data-label="Value">@</td>'),
    _safe("verdict-summary", "run.html", "run.verdict_summary"),
    _safe("set-name", "run.html", "data.set_name"),
    _safe("corpus-revision", "run.html", "run.corpus_revision"),
    _safe("run-key", "run.html", "data.run_key", '<span class="mono">@</span>{% endif %}'),
    _safe("labels-fingerprint", "run.html", "(run.labels_fingerprint or '')[:12]"),
    _safe(
        "run-heading", "run.html", "run.retriever", "<h1>Run {{ run.run_id }}: {{ run.set }} × @"
    ),
    Mutation(  # the breakable filter dropped for | safe: a stored id's markup reaches the page
        "expected-ids",
        "webui",
        TEMPLATES + "macros.html",
        '<s class="missing" title="not retrieved">{{ d | breakable }}</s>',
        '<s class="missing" title="not retrieved">{{ d | safe }}</s>',
        WEB_TESTS,
    ),
    Mutation(
        "retrieved-ids",
        "webui",
        TEMPLATES + "macros.html",
        '{% else %}<span class="id">{{ d | breakable }}</span>{% endif %}',
        '{% else %}<span class="id">{{ d | safe }}</span>{% endif %}',
        WEB_TESTS,
    ),
    _safe("overview-set", "overview.html", "p.set", "<strong>@</strong>"),
    _safe("overview-retriever", "overview.html", "p.retriever", "@</a>"),
    _safe("history-heading", "history.html", "data.set", "<h1>@ × "),
    _safe("history-title", "history.html", "data.retriever", "{% block title %}{{ data.set }} × @"),
    _safe("compare-question-text", "compare.html", "d.question"),
    _safe("compare-hard-class", "compare.html", "d.hard_class or ''"),
    _safe("compare-question-id", "compare.html", "d.id", '<td data-label="Id" class="mono">@'),
    _safe(
        "compare-retriever-option",
        "compare.html",
        "r",
        "{% if r in names %} checked{% endif %}> @</label>",
    ),
    _safe("error-message", "error.html", "message"),
    Mutation(
        "chart-legend",
        "webui",
        "retrieval_eval/webui/chart_marks.py",
        "{escape(entry.text)}</text>",
        "{entry.text}</text>",
        CHART_TESTS,
    ),
]


# -- running -------------------------------------------------------------------------------------


def _git(*args: str) -> bytes:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True).stdout


def copy_tree(target: Path, rev: str | None) -> None:
    """The working tree (tracked and untracked files git does not ignore), or commit ``rev``."""
    if rev is not None:
        archive = _git("archive", "--format=tar", rev)
        subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
        return
    for name in _git("ls-files", "-z", "--cached", "--others", "--exclude-standard").split(b"\0"):
        source = ROOT / os.fsdecode(name)
        if name and source.is_file():  # skips files deleted in the working tree
            destination = target / os.fsdecode(name)
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination)


def _environment(copy: Path) -> dict[str, str]:
    env = dict(os.environ)
    # the copy comes first; the venv's editable install of the live checkout comes after it
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(copy), env.get("PYTHONPATH")]))
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


@dataclass
class Outcome:
    status: str  # killed, survived, broken (the mutated code did not even load)
    seconds: float
    detail: str = ""


_RUNNING: set[subprocess.Popen[str]] = set()  # pytest processes, stopped on an interrupt
_LOCK = threading.Lock()


def run_tests(copy: Path, tests: tuple[str, ...], timeout: float) -> Outcome:
    # langsmith's pytest plugin alone costs 0.7 s of every start
    command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider"]
    command += ["-p", "no:langsmith_plugin", *tests]
    start = time.monotonic()
    with subprocess.Popen(
        command, cwd=copy, env=_environment(copy), stdout=PIPE, stderr=PIPE, text=True
    ) as process:
        with _LOCK:
            _RUNNING.add(process)
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            return Outcome("killed", time.monotonic() - start, f"timeout after {timeout:g} s")
        finally:
            with _LOCK:
                _RUNNING.discard(process)
    done = subprocess.CompletedProcess(command, process.returncode, stdout, stderr)
    seconds = time.monotonic() - start
    if done.returncode == 0:
        return Outcome("survived", seconds)
    failed = [line for line in done.stdout.splitlines() if line.startswith("FAILED ")]
    if done.returncode != 1 or not failed:  # collection or start-up broke: a broken mutation
        tail = (done.stdout + done.stderr).strip().splitlines()[-3:]
        return Outcome("broken", seconds, f"pytest exit {done.returncode}: {' | '.join(tail)}")
    # "FAILED tests/x/test_y.py::test_z[param] - AssertionError: message"
    test, _, message = failed[0].removeprefix("FAILED ").partition(" - ")
    return Outcome("killed", seconds, f"{test.rsplit('/', 1)[-1]} {message[:80]}".strip())


def check_snippets(copy: Path, mutations: list[Mutation]) -> list[str]:
    problems = []
    for m in mutations:
        path = copy / m.file
        count = path.read_text().count(m.original) if path.is_file() else -1
        if count != 1:
            where = "file missing" if count < 0 else f"found {count} times"
            problems.append(f"{m.name}: snippet not found exactly once in {m.file} ({where})")
    return problems


def check_imports(copy: Path) -> list[str]:
    probe = "import retrieval_eval; print(retrieval_eval.__file__)"
    command = [sys.executable, "-c", probe]
    found = subprocess.run(
        command, cwd=copy, env=_environment(copy), capture_output=True, text=True
    ).stdout.strip()
    return [] if found.startswith(str(copy)) else [f"retrieval_eval imports from {found!r}"]


def mutate(copies: queue.SimpleQueue[Path], m: Mutation, timeout: float) -> Outcome:
    """Apply ``m`` to a free copy, run its tests, put the file back and free the copy."""
    copy = copies.get()
    path = copy / m.file
    original = path.read_text()
    try:
        path.write_text(original.replace(m.original, m.replacement, 1))
        return run_tests(copy, m.tests, timeout)
    finally:
        path.write_text(original)
        copies.put(copy)


def table(rows: list[tuple[Mutation, Outcome]]) -> str:
    head = ("mutation", "area", "file", "must kill", "result", "s", "killed by")
    body = [
        (
            m.name,
            m.area,
            m.file.removeprefix("retrieval_eval/"),
            "yes" if m.must_kill else "no",
            o.status if o.status == "killed" else o.status.upper(),
            f"{o.seconds:.1f}",
            o.detail,
        )
        for m, o in rows
    ]
    widths = [max(len(row[i]) for row in [head, *body]) for i in range(len(head))]

    def line(cells: tuple[str, ...]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(head), rule, *(line(row) for row in body)])


def run(chosen: list[Mutation], jobs: int, timeout: float, rev: str | None) -> int:
    root = Path(tempfile.mkdtemp(prefix="retrieval-eval-mutate-"))
    copies: queue.SimpleQueue[Path] = queue.SimpleQueue()
    rows: dict[str, Outcome] = {}
    pool = ThreadPoolExecutor(max_workers=jobs)
    try:
        for number in range(jobs):
            copy = root / f"copy{number}"
            copy.mkdir()
            copy_tree(copy, rev)
            copies.put(copy)
        problems = check_snippets(copy, chosen) + check_imports(copy)
        if problems:
            print("\n".join(problems), file=sys.stderr)
            return 2
        groups = tuple(sorted({t for m in chosen for t in m.tests}))
        print(f"{len(chosen)} mutations, {jobs} at a time, in copies under {root}")
        print(f"first without any mutation: {' '.join(groups)}", flush=True)
        clean = run_tests(copy, groups, timeout)
        if clean.status != "survived":
            print(f"the tests fail unmutated ({clean.detail}): nothing to judge", file=sys.stderr)
            return 2
        futures = {pool.submit(mutate, copies, m, timeout): m for m in chosen}
        for done in as_completed(futures):
            m, outcome = futures[done], done.result()
            rows[m.name] = outcome
            print(f"[{len(rows)}/{len(chosen)}] {m.name}: {outcome.status}", flush=True)
    except KeyboardInterrupt:
        with _LOCK:
            for process in _RUNNING:
                process.terminate()
        print("\ninterrupted; the live checkout was never touched", file=sys.stderr)
        return 130
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        shutil.rmtree(root, ignore_errors=True)

    ordered = [(m, rows[m.name]) for m in chosen]
    print("\n" + table(ordered))
    survivors = [m for m, o in ordered if o.status == "survived"]
    broken = [m.name for m, o in ordered if o.status == "broken"]
    killed = sum(1 for _, o in ordered if o.status == "killed")
    names = ", ".join(m.name for m in survivors) or "none"
    print(f"\n{killed} of {len(ordered)} killed; survivors: {names}")
    must = [m.name for m in survivors if m.must_kill]
    if broken:
        print(f"BROKEN MUTATIONS (fix their snippets): {', '.join(broken)}", file=sys.stderr)
        return 2
    if must:
        print(f"MUST-KILL SURVIVORS: {', '.join(must)}", file=sys.stderr)
        return 1
    return 0


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run these mutations only")
    parser.add_argument("--area", action="append", help="run one area (repeatable)")
    parser.add_argument("--list", action="store_true", help="list the mutations and exit")
    parser.add_argument("--rev", help="mutate this commit instead of the working tree")
    parser.add_argument("--jobs", "-j", type=int, default=2, help="mutations run at once")
    parser.add_argument("--timeout", type=float, default=300, help="seconds per mutation")
    args = parser.parse_args(argv)

    unknown = set(args.only or ()) - {m.name for m in MUTATIONS}
    chosen = [
        m
        for m in MUTATIONS
        if (not args.only or m.name in args.only) and (not args.area or m.area in args.area)
    ]
    if unknown or not chosen:
        print(f"no such mutation: {', '.join(sorted(unknown)) or 'none selected'}", file=sys.stderr)
        return 2
    if args.list:
        for m in chosen:
            kind = "must kill" if m.must_kill else "reported"
            print(f"{m.name:40} {m.area:10} {m.file:40} {kind}")
        return 0
    signal.signal(signal.SIGTERM, _interrupt)  # killed like Ctrl-C: stop pytest, remove copies
    return run(chosen, max(1, args.jobs), args.timeout, args.rev)


if __name__ == "__main__":
    sys.exit(main())
