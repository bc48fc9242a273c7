"""``run_lint``: every check that the given inputs allow, with the reason for each one skipped.

Inputs and what they enable:

- ``retriever``: dead labels (when it can look ids up), and its corpus (lexical, dense, or a
  chunked adapter around one) when no ``corpus`` is given;
- ``corpus`` (a path, as the lexical adapter reads it, or documents): form honesty, label
  completeness;
- ``store`` (read-only: anything with ``retrievers_for`` and ``history``): never found, and the
  rates for the power figures (the newest run of ``retriever`` when it has one, else the newest
  of any retriever; ``result``, a run just made, wins over both);
- always: duplicate questions, identical targets, power (without rates when nothing is stored).

``dead_labels``: the retriever's dead-label check already made by the caller (the DAG's lint
task makes it for the run); given, the retriever's ``existing_ids`` is not asked a second time.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from retrieval_eval.config import LintOptions, Thresholds
from retrieval_eval.golden.models import GoldenQuestionSet
from retrieval_eval.lint import completeness, dead, duplicates, forms, never_found, power
from retrieval_eval.lint.models import Finding, LintReport, PowerReport
from retrieval_eval.retrievers.corpus import Document, read_corpus

if TYPE_CHECKING:
    from retrieval_eval.labels import DeadLabels
    from retrieval_eval.results import RunResult
    from retrieval_eval.store.models import StoredRun

NO_CORPUS = "no corpus: give --corpus PATH, or --retriever R whose adapter has one"
POWER = "power"


def corpus_path(retriever: Any) -> Path | None:
    """The corpus path of a lexical or dense retriever, or of a chunked one's inner retriever."""
    while retriever is not None:
        path = getattr(getattr(retriever, "options", None), "corpus", None)
        if isinstance(path, Path):
            return path
        retriever = getattr(retriever, "inner", None)
    return None


def run_lint(
    golden_set: GoldenQuestionSet,
    *,
    retriever: Any = None,
    corpus: Path | Sequence[Document] | None = None,
    store: Any = None,
    options: LintOptions | None = None,
    thresholds: Thresholds | None = None,
    result: RunResult | None = None,
    dead_labels: DeadLabels | None = None,
) -> LintReport:
    options = options or LintOptions()
    thresholds = thresholds or Thresholds()
    report = LintReport(set_id=golden_set.identifier, questions=len(golden_set))

    def ran(check: str, findings: list[Finding]) -> None:
        report.checks_run.append(check)
        report.findings.extend(findings)

    if retriever is None:
        report.checks_skipped[dead.CHECK] = "no retriever: give --retriever R"
    else:
        outcome = dead.check_dead_labels(golden_set, retriever, dead_labels)
        if isinstance(outcome, str):
            report.checks_skipped[dead.CHECK] = outcome
        else:
            ran(dead.CHECK, outcome)

    if corpus is None and retriever is not None:
        corpus = corpus_path(retriever)
    documents = read_corpus(corpus) if isinstance(corpus, Path) else corpus
    if documents is None:
        for check in (forms.CHECK, completeness.CHECK):
            report.checks_skipped[check] = NO_CORPUS
    else:
        texts = {doc.id: doc.content for doc in documents}
        ran(forms.CHECK, forms.check_forms(golden_set, texts, options))
        path = corpus if isinstance(corpus, Path) else None
        found = completeness.check_completeness(golden_set, documents, options, path)
        ran(completeness.CHECK, found)

    ran(duplicates.CHECK, duplicates.check_duplicates(golden_set, options))

    runs: list[StoredRun] = []
    if store is None:
        report.checks_skipped[never_found.CHECK] = "no result store with runs of this set"
    else:
        runs = never_found.matching_runs(store, golden_set)
        if runs:
            ran(never_found.CHECK, never_found.check_never_found(golden_set, runs))
        else:
            report.checks_skipped[never_found.CHECK] = (
                f"no stored valid run of {golden_set.identifier} with these labels "
                f"(fingerprint {golden_set.fingerprint[:12]})"
            )

    run, rates_from = (result, "this run") if result is not None else _newest(runs, retriever)
    report.power = _power(golden_set, thresholds, options, run, rates_from)
    ran(POWER, _power_findings(report.power, thresholds))
    return report


def _newest(runs: list[StoredRun], retriever: Any) -> tuple[RunResult | None, str]:
    """The newest stored run of ``retriever``, else of any retriever, and how to name it."""
    name = getattr(retriever, "identifier", None)
    pool = [r for r in runs if r.result.retriever == name] or runs
    if not pool:
        return None, "no stored run (rates unknown)"
    newest = max(pool, key=lambda r: (r.run_date, r.id))
    return newest.result, f"stored run {newest.id} of {newest.result.retriever}"


def _power(
    golden_set: GoldenQuestionSet,
    thresholds: Thresholds,
    options: LintOptions,
    run: RunResult | None,
    rates_from: str,
) -> PowerReport:
    sizes = {"overall": len(golden_set)}
    forms_count = Counter(q.form.value for q in golden_set.questions)
    classes = Counter(q.hard_class for q in golden_set.questions if q.hard_class)
    for prefix, counts in (("form", forms_count), ("hard_class", classes)):
        for value, n in sorted(counts.items()):
            if n >= thresholds.min_slice_questions:
                sizes[f"{prefix}={value}"] = n
    rates: dict[tuple[str, str], float | None] = {}
    if run is not None:
        rates[("overall", "top1")] = run.top1_hit_rate
        rates[("overall", "top3")] = run.top3_hit_rate
        for prefix, slices in (("form", run.by_form), ("hard_class", run.by_hard_class)):
            for value, rate in slices.items():
                rates[(f"{prefix}={value}", "top1")] = rate.top1_hit_rate
                rates[(f"{prefix}={value}", "top3")] = rate.top3_hit_rate
    return PowerReport(
        alpha=options.alpha,
        power=options.power,
        churn=options.churn,
        rates_from=rates_from,
        figures=power.figures(sizes, rates, thresholds, options),
    )


def _power_findings(report: PowerReport, thresholds: Thresholds) -> list[Finding]:
    """A warning per overall metric whose threshold is below the detectable drop; one info
    listing the slices that cannot see their threshold (slices are small by nature)."""
    findings = []
    weak_slices = []
    for figure in report.figures:
        if not figure.threshold_too_small:
            continue
        if figure.scope != "overall":
            weak_slices.append(figure)
            continue
        seen = (
            "no drop up to the whole rate"
            if figure.detectable_drop is None
            else f"{figure.detectable_drop * 100:.1f} points"
        )
        findings.append(
            Finding(
                check=POWER,
                severity="warning",
                message=f"max_{figure.metric}_drop {figure.threshold * 100:.0f} points is below "
                f"what {figure.questions} questions detect ({seen} at alpha {report.alpha}, "
                f"power {report.power}): about {figure.questions_needed} questions are needed",
                details=figure.model_dump(),
            )
        )
    if weak_slices:
        names = sorted({f.scope for f in weak_slices})
        findings.append(
            Finding(
                check=POWER,
                severity="info",
                message=f"{len(names)} slice(s) too small to detect their threshold: "
                + ", ".join(names),
                details={"slices": [f.model_dump() for f in weak_slices]},
            )
        )
    return findings
