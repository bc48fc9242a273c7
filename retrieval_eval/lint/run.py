"""``run_lint``: every check that the given inputs allow, with the reason for each one skipped.

Inputs and what they enable:

- ``retriever``: dead labels (when it can look ids up), and its corpus (lexical, dense,
  run_file given a corpus, or a chunked adapter around one) when no ``corpus`` is given;
- ``corpus`` (a path, as the lexical adapter reads it, or documents): form honesty, label
  completeness. A folder holding a ``corpus.jsonl`` is a BEIR collection: its ``corpus.jsonl``
  is read (not the folder's ``.md`` files, such as a ``SOURCE.md``);
- ``stored`` (what a store holds of the set, :class:`~retrieval_eval.lint.never_found.StoredRuns`,
  read by :func:`retrieval_eval.workflows.lint.stored_for_lint`): never found, its judgments of
  the set (judged pairs are no completeness candidate), and the rates for the power figures (the
  newest run of ``retriever`` when it has one, else the newest of any retriever; ``result``, a run
  just made, wins over both);
- always: duplicate questions, identical targets, power (without rates when nothing is stored).

**A corpus that is not the set's** (the wrong folder: ids come out as ``corpus/billing/x.md``
where the set says ``billing/x.md``) would make both text checks pass vacuously. So when fewer
than half (``MIN_TARGETS_IN_CORPUS``) of the set's distinct target ids are in the corpus, the
text checks do not run: a ``corpus`` given by the caller raises :class:`CorpusMismatchError`
(exit 2: the path, how many targets were found, an id from each side and the fix); a corpus taken
from the retriever skips them with that reason. Half, not "any": a set whose labels partly rotted
is still linted (dead labels reports the rest), while a corpus sharing a stray id or two with the
set is still the wrong one.

``dead_labels``: the retriever's dead-label check already made by the caller (the DAG's lint
task makes it for the run); given, the retriever's ``existing_ids`` is not asked a second time.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from retrieval_eval.config.models import LintOptions, Thresholds
from retrieval_eval.errors import ConfigError
from retrieval_eval.formats.numbers import points
from retrieval_eval.golden.models import GoldenQuestionSet
from retrieval_eval.lint import completeness, dead, duplicates, forms, never_found, power
from retrieval_eval.lint.models import Finding, LintReport, PowerReport
from retrieval_eval.lint.render import what_is_seen
from retrieval_eval.retrievers.corpus import Document, beir_corpus_file, read_corpus

if TYPE_CHECKING:
    from retrieval_eval.evaluation.labels import DeadLabels
    from retrieval_eval.evaluation.results import RunResult
    from retrieval_eval.lint.never_found import StoredRun, StoredRuns

NO_CORPUS = "no corpus: give --corpus PATH, or --retriever R whose adapter has one"
POWER = "power"
MIN_TARGETS_IN_CORPUS = 0.5


class CorpusMismatchError(ConfigError):
    """The corpus given holds too few of the set's target ids to lint against (exit 2)."""


def corpus_path(retriever: Any) -> Path | None:
    """The corpus path of a lexical or dense retriever (``options.corpus``), of a run_file one
    given a corpus (``corpus``), or of a chunked one's inner retriever."""
    while retriever is not None:
        for path in (getattr(getattr(retriever, "options", None), "corpus", None),
                     getattr(retriever, "corpus", None)):  # fmt: skip
            if isinstance(path, Path):
                return path
        retriever = getattr(retriever, "inner", None)
    return None


def corpus_mismatch(
    golden_set: GoldenQuestionSet, documents: Sequence[Document], path: Path | None
) -> str | None:
    """Why the corpus is not the set's (too few of its target ids in it), or None."""
    targets = sorted({d for q in golden_set.questions for d in q.targets()})
    ids = {doc.id for doc in documents}
    found = sum(1 for t in targets if t in ids)
    if not targets or found >= MIN_TARGETS_IN_CORPUS * len(targets):
        return None
    name = f"corpus {path}" if path is not None else "the corpus given"
    target = next(t for t in targets if t not in ids)
    # a corpus id ending in the target's id shows the folder the set's ids are relative to
    same = sorted(i for i in ids if i.endswith("/" + target))
    example = same[0] if same else min(ids)
    if same and path is not None and path.is_dir():
        fix = f"give the folder the ids are relative to, --corpus {path / example[: -len(target)]}"
    else:
        fix = (
            "give the corpus the set was labelled against (a BEIR folder or its corpus.jsonl, or "
            "the folder its ids are relative to)"
        )
    return (
        f"{name}: {found} of the {len(targets)} target ids of {golden_set.identifier} are in it "
        f"(at least half must be; a target: {target!r}; a corpus id: {example!r}): {fix}"
    )


def run_lint(
    golden_set: GoldenQuestionSet,
    *,
    retriever: Any = None,
    corpus: Path | Sequence[Document] | None = None,
    stored: StoredRuns | None = None,
    options: LintOptions | None = None,
    thresholds: Thresholds | None = None,
    result: RunResult | None = None,
    dead_labels: DeadLabels | None = None,
    depths: Sequence[int] | None = None,
) -> LintReport:
    """Every check the inputs allow (module docstring). ``depths``: the evaluation's gated
    depths the power figures are at (default: ``result``'s, else the newest stored run's, else
    top-1 and top-3)."""
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

    given = corpus is not None
    if corpus is None and retriever is not None:
        corpus = corpus_path(retriever)
    path = beir_corpus_file(corpus) if isinstance(corpus, Path) else None
    documents = read_corpus(path) if path is not None else cast("Sequence[Document] | None", corpus)
    mismatch = None if documents is None else corpus_mismatch(golden_set, documents, path)
    if mismatch and given:
        raise CorpusMismatchError(mismatch)
    if documents is None or mismatch:
        for check in (forms.CHECK, completeness.CHECK):
            report.checks_skipped[check] = mismatch or NO_CORPUS
    else:
        texts = {doc.id: doc.content for doc in documents}
        ran(forms.CHECK, forms.check_forms(golden_set, texts, options))
        judged = list(stored.judgments) if stored is not None else []
        found = completeness.check_completeness(golden_set, documents, options, path, judged)
        ran(completeness.CHECK, found)

    ran(duplicates.CHECK, duplicates.check_duplicates(golden_set, options))

    runs: list[StoredRun] = []
    if stored is None:
        report.checks_skipped[never_found.CHECK] = "no result store with runs of this set"
    else:
        runs = list(stored.runs)
        if runs:
            ran(never_found.CHECK, never_found.check_never_found(golden_set, runs))
        else:
            report.checks_skipped[never_found.CHECK] = (
                f"no stored valid run of {golden_set.identifier} with these labels "
                f"(fingerprint {golden_set.fingerprint[:12]})"
            )

    pool = _pool(runs, retriever)
    run, rates_from = (result, "this run") if result is not None else _newest(pool)
    gated = list(depths or (run.depths if run is not None else (1, 3)))
    report.power = _power(golden_set, thresholds, options, run, rates_from, gated, pool)
    ran(POWER, _power_findings(report.power, thresholds))
    return report


def _pool(runs: list[StoredRun], retriever: Any) -> list[StoredRun]:
    """The stored runs of ``retriever`` (else, when it has none, of the newest run's retriever:
    one evaluation), oldest first."""
    name = getattr(retriever, "identifier", None)
    pool = [r for r in runs if r.result.retriever == name]
    if not pool and runs:
        newest = max(runs, key=lambda r: (r.run_date, r.id))
        pool = [r for r in runs if r.result.retriever == newest.result.retriever]
    return sorted(pool, key=lambda r: (r.run_date, r.id))


def _newest(pool: list[StoredRun]) -> tuple[RunResult | None, str]:
    """The newest of an evaluation's stored runs, and how to name it."""
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
    depths: Sequence[int],
    pool: Sequence[StoredRun],
) -> PowerReport:
    sizes = {"overall": len(golden_set)}
    forms_count = Counter(q.form.value for q in golden_set.questions)
    classes = Counter(q.hard_class for q in golden_set.questions if q.hard_class)
    for prefix, counts in (("form", forms_count), ("hard_class", classes)):
        for value, n in sorted(counts.items()):
            if n >= thresholds.min_slice_questions:
                sizes[f"{prefix}={value}"] = n
    rates: dict[tuple[str, str], float | None] = {}
    if run is not None:  # a depth the run did not judge has no rate (None)
        for depth in depths:
            rates[("overall", f"top{depth}")] = run.hit_rate(depth)
            for prefix, slices in (("form", run.by_form), ("hard_class", run.by_hard_class)):
                for value, rate in slices.items():
                    rates[(f"{prefix}={value}", f"top{depth}")] = rate.hit_rate(depth)
    churn_at = power.measured_churn([r.result.questions for r in pool], depths)
    churn_from = (
        f"measured over {len(pool)} stored runs of {pool[-1].result.retriever}"
        if churn_at
        else f"assumed (lint.churn {options.churn})"
    )
    return PowerReport(
        alpha=options.alpha,
        power=options.power,
        churn=options.churn,
        rates_from=rates_from,
        figures=power.figures(sizes, rates, thresholds, options, depths, churn_at),
        churn_at=churn_at,
        churn_from=churn_from,
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
        threshold = points(figure.threshold, "points", digits=0)
        findings.append(
            Finding(
                check=POWER,
                severity="warning",
                message=f"max_{figure.metric}_drop {threshold}: "
                f"{what_is_seen(figure, 'points')} (alpha {report.alpha}, power {report.power})",
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
                + ", ".join(names)
                + " (the verdict counts their drops only when significant)",
                details={"slices": [f.model_dump() for f in weak_slices]},
            )
        )
    return findings
