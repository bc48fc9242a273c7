"""``retrieval-eval sets judge import FILE``: relevance judgments from a file into the store.

The file is a judgments file (JSONL or CSV, :mod:`retrieval_eval.labels.judgments`), as
``sets pool`` writes it and people fill it in. Every row is checked before anything is stored:
a bad row (line-numbered) or a question id that is not the set's is exit 2 and stores nothing.
Rows without a grade (not judged yet) are skipped and counted. The agreement of the raters, the
conflicts and the merge rule are printed; the graded rows go into the store in one transaction.
An unreachable store is exit 3, saying that none of the file's rows were stored.
"""

from __future__ import annotations

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
    """Relevance judgments: import filled-in judgments files into the store."""


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
    from retrieval_eval.store.judgments import add_judgments

    try:
        with open_store(resolve_store_url(db, config)) as store:
            count = add_judgments(
                store, set_identifier, rows, channel="import", written_by=_os_user()
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
