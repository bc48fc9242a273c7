"""``retrieval-eval sets judge import FILE``: relevance judgments from a file into the store.

The file is a judgments file (JSONL or CSV, :mod:`retrieval_eval.labels.judgments`), as
``sets pool`` writes it and people fill it in. Every row is checked before anything is stored:
a bad row (line-numbered) or a question id that is not the set's is exit 2 and stores nothing.
Rows without a grade (not judged yet) are skipped and counted. The agreement of the raters, the
conflicts and the merge rule are printed; the graded rows go into the store in one transaction.
An unreachable store is exit 3, saying that none of the file's rows were stored.

``sets judge auto`` grades pooled pairs with a model judge of the config's ``judges:``
(:mod:`retrieval_eval.workflows.judge`), ``sets judge calibrate`` measures it against people;
see docs/how-to/model-judges.md.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from retrieval_eval.cli.db_cmd import db_option
from retrieval_eval.cli.options import config_option
from retrieval_eval.cli.sets_cmd import sets

if TYPE_CHECKING:
    from retrieval_eval.config.models import Config
    from retrieval_eval.golden.models import GoldenQuestionSet
    from retrieval_eval.labels.judgments import Judgment, Summary

MAX_LISTED = 20  # conflicts and unknown ids listed; the rest are counted


@sets.group("judge")
def judge() -> None:
    """Relevance judgments: import filled-in judgments files, or grade pooled pairs with a
    model judge calibrated against people."""


@judge.command("import")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--set", "set_name", default=None, help="The set judged (default: the configured "
              "set that has every question id of the file).")  # fmt: skip
@config_option
@db_option
def import_judgments(
    file: Path, set_name: str | None, config_path: str | None, db: str | None
) -> None:
    """Check a judgments file against its set, print the raters' agreement and conflicts, and
    store its graded rows. Exit 2 on bad input (nothing stored), 3 when the store is down."""
    from retrieval_eval.config.models import load_config
    from retrieval_eval.labels.judgments import read_judgment_lines, summarise
    from retrieval_eval.workflows.labelled_run import resolve_set

    config = load_config(config_path)
    lines = read_judgment_lines(file)
    rows = [row for _, row in lines]
    golden = resolve_set(config, set_name) if set_name else _set_of(config, file, rows)
    _check_question_ids(file, golden, lines)
    graded = [row for row in rows if row.grade is not None]
    skipped = len(rows) - len(graded)
    click.echo(
        f"{file}: {len(rows)} row(s) for set {golden.identifier}: {len(graded)} graded, "
        f"{skipped} without a grade (skipped)"
    )
    click.echo(_summary_text(summarise(rows)), nl=False)
    if graded:
        _store(file, golden.identifier, graded, db, config)


def _set_of(config: Config, file: Path, rows: list[Judgment]) -> GoldenQuestionSet:
    """The one configured set holding every question id of the file."""
    from retrieval_eval.errors import InvalidInputError

    registry = config.golden_sets
    ids = {row.question_id for row in rows if row.question_id is not None}
    fits = [
        name for name in registry.names() if ids <= {q.id for q in registry.get(name).questions}
    ]
    if len(fits) == 1:
        return registry.get(fits[0])
    names = ", ".join(registry.names()) or "none configured"
    which = "no configured set has" if not fits else f"{len(fits)} sets ({', '.join(fits)}) have"
    raise InvalidInputError(
        f"{file}: {which} every question id of the file: give --set SET (sets: {names})"
    )


def _check_question_ids(
    file: Path, golden: GoldenQuestionSet, lines: list[tuple[int, Judgment]]
) -> None:
    """Every row's question id must be one of the set's: exit 2 naming each line and id."""
    from retrieval_eval.errors import GoldenSetError
    from retrieval_eval.safety.limits import quote
    from retrieval_eval.safety.suggest import did_you_mean

    known = {q.id for q in golden.questions}
    unknown = [(n, r.question_id) for n, r in lines if r.question_id and r.question_id not in known]
    if not unknown:
        return
    problems = [
        f"{file}: line {n}: question_id: {quote(qid)} is not a question of set "
        f"{golden.identifier}{did_you_mean(qid, known)}: fix the id, or leave question_id empty "
        "and give the text of a new question in 'question'"
        for n, qid in unknown[:MAX_LISTED]
    ]
    if len(unknown) > MAX_LISTED:
        problems.append(f"{file}: {len(unknown) - MAX_LISTED} more row(s) with unknown ids")
    raise GoldenSetError(problems)


def _summary_text(summary: Summary) -> str:
    """Raters, agreement, conflicts and the merge rule, one line each (conflicts capped)."""
    from retrieval_eval.formats.numbers import decimal
    from retrieval_eval.labels.agreement import MERGE_RULE

    both = summary.shared
    out = [f"raters: {', '.join(summary.raters) or 'none'}; {len(summary.merged)} pair(s) graded"]
    if len(summary.raters) == 2:
        out.append(
            f"agreement: Cohen's κ (quadratic weights) {decimal(summary.kappa, 3)} over "
            f"{both} pair(s) both raters graded"
        )
    elif len(summary.raters) > 2:
        out.append(
            f"agreement: Krippendorff's α (ordinal) {decimal(summary.alpha, 3)} over "
            f"{both} pair(s) graded by two raters or more"
        )
    else:
        out.append("agreement: one rater, nothing to compare")
    out.append(f"conflicts: {len(summary.conflicts)}")
    for conflict in summary.conflicts[:MAX_LISTED]:
        grades = ", ".join(f"{rater} {grade}" for rater, grade in sorted(conflict.grades.items()))
        out.append(f"  {conflict.question_key} / {conflict.document_id}: {grades}")
    if len(summary.conflicts) > MAX_LISTED:
        out.append(f"  ... and {len(summary.conflicts) - MAX_LISTED} more")
    out.append(f"merge rule: {MERGE_RULE}")
    return "\n".join(out) + "\n"


def _store(
    file: Path, set_identifier: str, rows: list[Judgment], db: str | None, config: Config
) -> None:
    from retrieval_eval.errors import StoreUnavailableError
    from retrieval_eval.store import open_store, resolve_store_url

    try:
        with open_store(resolve_store_url(db, config)) as store:
            count = store.judgments.add(
                set_identifier, rows, channel="import", written_by=_os_user()
            )
            where = store.display_url
    except StoreUnavailableError as exc:
        raise type(exc)(
            f"{exc}; nothing was stored: the {len(rows)} graded row(s) of {file} are still only "
            "in the file: import it again once the store is reachable"
        ) from None
    click.echo(f"stored {count} judgment(s) of {set_identifier} in {where}")


def _os_user() -> str:
    """Who ran the import, as the store records it (``unknown`` when the OS cannot tell)."""
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def _retriever_names(ctx: click.Context, param: click.Parameter, value: str | None) -> list[str]:
    if not value:
        return []
    return list(dict.fromkeys(part.strip() for part in value.split(",") if part.strip()))


class _Progress:
    """The running count and cost on stderr: a line every tenth of the pairs (and the last)."""

    def __init__(self, judge: str, total: int) -> None:
        self.judge = judge
        self.total = total
        self.step = max(1, total // 10)

    def __call__(self, tally: object) -> None:
        from retrieval_eval.labels.model_judges import Tally

        assert isinstance(tally, Tally)
        if tally.done % self.step and tally.done != tally.total:
            return
        click.echo(
            f"  judge:{self.judge}: asked {tally.done}/{tally.total}: {tally.graded} graded, "
            f"{tally.unjudged} unjudged, ${tally.cost_usd:.4f} so far",
            file=sys.stderr,
        )


@judge.command("auto")
@click.argument("set_name", metavar="SET")
@click.option("--judge", "judge_name", required=True, metavar="NAME",
              help="A judge of the config's judges: section.")  # fmt: skip
@click.option("--pool", "pool_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, help="A judgments file as `sets pool` writes it (rows with a text "
              "and no grade are judged).")  # fmt: skip
@click.option("--retrievers", callback=_retriever_names, default=None, metavar="R1,R2,...",
              help="Pool these retrievers now, as `sets pool --retrievers` does, and judge the "
              "pool.")  # fmt: skip
@click.option("--fresh", is_flag=True,
              help="With --retrievers: pool runs made now (not saved), not stored runs.")  # fmt: skip
@click.option("--depth", type=click.IntRange(1, 1000), default=10, show_default=True,
              help="With --retrievers: how deep each ranking is pooled.")  # fmt: skip
@click.option("--max-pairs", type=click.IntRange(1), default=None, metavar="N",
              help="Ask the judge about at most N pairs (cached answers are free).")  # fmt: skip
@config_option
@db_option
def auto(
    set_name: str,
    judge_name: str,
    pool_file: Path | None,
    retrievers: list[str],
    fresh: bool,
    depth: int,
    max_pairs: int | None,
    config_path: str | None,
    db: str | None,
) -> None:
    """Grade SET's pooled pairs with a model judge and store its judgments (rater
    judge:NAME, with model, prompt fingerprint, tokens and cost). Answers are cached: a second
    run asks nothing already asked. Exit 0 every pair asked; 1 stopped by --max-pairs or the
    judge's max_cost_usd (what was judged is stored); 2 bad input; 3 the store or the judge's
    endpoint refused (what was judged before is stored)."""
    from retrieval_eval.config.models import load_config
    from retrieval_eval.errors import InvalidInputError
    from retrieval_eval.labels.judgments import check_suffix, read_judgments
    from retrieval_eval.labels.model_judges import JudgeUnavailableError
    from retrieval_eval.workflows.base import run_in_process
    from retrieval_eval.workflows.judge import JudgeJob, JudgeWorkflow, pairs_from_rows
    from retrieval_eval.workflows.labelled_run import resolve_set

    if (pool_file is None) == (not retrievers):
        raise InvalidInputError(
            "give the pairs to judge: --pool FILE (a `sets pool` file) or --retrievers R1,R2"
        )
    config = load_config(config_path)
    config.judge_spec(judge_name)  # an unknown judge before any work
    golden = resolve_set(config, set_name)
    if pool_file is not None:
        check_suffix(pool_file, "--pool")
        rows = read_judgments(pool_file)
    else:
        rows = _pooled_rows(config, set_name, retrievers, db, fresh, depth)
    pairs, left = pairs_from_rows(golden, rows)
    for why, count in sorted(left.items()):
        click.echo(f"  left out: {count} row(s): {why}", file=sys.stderr)
    job = JudgeJob(
        config_path=str(config.path) if config.path else None,
        db=db,
        set_identifier=golden.identifier,
        judge=judge_name,
        pairs=pairs,
        max_pairs=max_pairs,
        written_by=_os_user(),
    )
    workflow = JudgeWorkflow(job)
    workflow._config = config
    workflow.on_answer = _Progress(judge_name, len(pairs))
    outcome = run_in_process(workflow)
    click.echo(
        f"judge:{judge_name} ({outcome.model or 'python'}, identity {outcome.identity}) on "
        f"{golden.identifier}: {outcome.pairs} pair(s): {outcome.from_cache} from the cache, "
        f"{outcome.asked} asked, {outcome.not_asked} not asked; {outcome.graded} graded, "
        f"{outcome.unjudged} unjudged; cost ${outcome.cost_usd:.4f}; {outcome.stored} "
        "judgment(s) stored"
    )
    for why, count in sorted(outcome.reasons.items()):
        click.echo(f"  unjudged: {count}: {why}")
    if outcome.error:
        raise JudgeUnavailableError(
            f"{outcome.error}; the {outcome.stored} judgment(s) made before it are stored"
        )
    if outcome.stopped:
        click.echo(f"stopped: {outcome.stopped}; what was judged is stored", err=True)
        raise SystemExit(1)


def _pooled_rows(
    config: Config, set_name: str, retrievers: list[str], db: str | None,
    fresh: bool, depth: int,
) -> list[Judgment]:  # fmt: skip
    """The pool `sets pool --retrievers` would write (with texts), notes on stderr."""
    from retrieval_eval.workflows.base import run_in_process
    from retrieval_eval.workflows.pool import PoolJob, PoolWorkflow

    job = PoolJob(
        config_path=str(config.path) if config.path else None,
        db=db,
        set=set_name,
        retrievers=retrievers,
        depth=depth,
        fresh=fresh,
        lint=False,
    )
    outcome = run_in_process(PoolWorkflow(job, config=config))
    for note in outcome.notes:
        click.echo(f"  note: {note}", file=sys.stderr)
    return outcome.rows


@judge.command("calibrate")
@click.argument("set_name", metavar="SET")
@click.option("--judge", "judge_name", required=True, metavar="NAME",
              help="A judge of the config's judges: section.")  # fmt: skip
@click.option("--judgments", "judgments_files", multiple=True,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="A judgments file people graded (its texts are shown to the judge); "
              "repeatable. The store's people-graded pairs count too.")  # fmt: skip
@click.option("--retrievers", callback=_retriever_names, default=None, metavar="R1,R2,...",
              help="Retrievers whose document_texts give the texts the files lack.")  # fmt: skip
@click.option("--sample", "sample_size", type=click.IntRange(1), default=500, show_default=True,
              help="At most this many people-graded pairs, drawn by --seed.")  # fmt: skip
@click.option("--seed", type=int, default=0, show_default=True,
              help="The sample's and the bootstrap interval's seed.")  # fmt: skip
@click.option("--depth", type=click.IntRange(1, 1000), default=10, show_default=True,
              help="The depth of the hit rates Kendall's τ ranks retrievers by.")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print the calibration as JSON.")
@config_option
@db_option
def calibrate_cmd(
    set_name: str,
    judge_name: str,
    judgments_files: tuple[Path, ...],
    retrievers: list[str],
    sample_size: int,
    seed: int,
    depth: int,
    as_json: bool,
    config_path: str | None,
    db: str | None,
) -> None:
    """Measure a model judge against people on SET's people-graded pairs: Cohen's κ (quadratic)
    with its 95% interval, the confusion matrix, per-grade agreement and Kendall's τ between the
    stored retrievers' rankings under people's and the judge's labels. Stored with the judge's
    identity: its grades count as judged only once κ reaches its min_kappa. Exit 0 passed, 1
    below min_kappa, 2 bad input, 3 the store or the judge's endpoint refused."""
    from retrieval_eval.config.models import load_config
    from retrieval_eval.errors import InvalidInputError
    from retrieval_eval.labels.judgments import read_judgments
    from retrieval_eval.workflows.judge import calibrate
    from retrieval_eval.workflows.labelled_run import resolve_set

    config = load_config(config_path)
    config.judge_spec(judge_name)
    golden = resolve_set(config, set_name)
    files = [row for file in judgments_files for row in read_judgments(file)]
    result = calibrate(
        config,
        golden,
        judge_name,
        db=db,
        files=files,
        retrievers=retrievers,
        size=sample_size,
        seed=seed,
        depth=depth,
        written_by=_os_user(),
        on_answer=_Progress(judge_name, sample_size),
    )
    if result.pairs == 0:
        raise InvalidInputError(
            f"no people-graded pair of {golden.identifier} with a text and a grade from "
            f"judge:{judge_name}: give --judgments FILE (graded rows with their text) or "
            "--retrievers that offer document_texts"
        )
    if as_json:
        import orjson

        sys.stdout.buffer.write(
            orjson.dumps(
                result.model_dump(mode="json"), option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS
            )
            + b"\n"
        )
        sys.stdout.flush()
    else:
        click.echo(_calibration_text(result), nl=False)
    if not result.passed:
        raise SystemExit(1)


def _calibration_text(result: object) -> str:
    from retrieval_eval.formats.numbers import decimal, pct
    from retrieval_eval.workflows.judge import Calibration

    assert isinstance(result, Calibration)
    out = [
        f"judge:{result.judge} (identity {result.identity}, model {result.model or 'python'}) "
        f"against people on {result.set_identifier}: calibration {result.id}",
        f"  pairs: {result.people_pairs} people-graded, {result.without_text} without a text, "
        f"{result.sampled} sampled (seed {result.seed}), {result.unjudged} unjudged by the "
        f"judge, {result.pairs} compared; {result.asked} asked, cost ${result.cost_usd:.4f}",
        f"  Cohen's κ (quadratic): {decimal(result.kappa, 3)} "
        f"[{decimal(result.kappa_low, 3)}, {decimal(result.kappa_high, 3)}] "
        f"({pct(result.confidence)} bootstrap interval); exact agreement {pct(result.exact)}",
        "  confusion (rows: people's grade, columns: the judge's 0 1 2 3):",
    ]
    for grade, row in enumerate(result.confusion):
        share = result.per_grade.get(grade)
        out.append(f"    {grade}: {' '.join(f'{n:5d}' for n in row)}   same grade: {pct(share)}")
    if result.tau is None:
        out.append(
            f"  Kendall's τ: none ({len(result.rates)} retriever(s) with stored runs; two or "
            "more are ranked)"
        )
    else:
        out.append(
            f"  Kendall's τ of {len(result.rates)} retrievers' top-{result.depth} hit rates, "
            f"people's labels vs the judge's: {decimal(result.tau, 3)}"
        )
        for name, rates in sorted(result.rates.items()):
            out.append(f"    {name}: {pct(rates['people'])} vs {pct(rates['judge'])}")
    verdict = "passed" if result.passed else "failed"
    effect = (
        "its grades count as judged" if result.passed else "its grades stay candidates for people"
    )
    out.append(f"  gate: κ ≥ {result.min_kappa:g}: {verdict}: {effect}")
    return "\n".join(out) + "\n"
