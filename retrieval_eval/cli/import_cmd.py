"""Dataset import and export: ``sets import-beir``, ``sets import-trec``, ``sets export-qrels``
and ``runs export`` (a stored run as a TREC run file; ``export-run`` is its old spelling).

An import ends by printing how to use the set: the ``sets:`` lines for the config in use (paths
relative to it; a path YAML would misread is quoted), for a BEIR folder with a ``corpus.jsonl``
a ``lexical`` retriever over it, and the exact ``run`` command. ``runs export`` only reads: with
no store it exits 2 and creates none.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from retrieval_eval.cli import cli
from retrieval_eval.cli.aliases import old_command
from retrieval_eval.cli.db_cmd import db_option, store_url_for
from retrieval_eval.cli.history_cmd import runs
from retrieval_eval.cli.options import RUN_ID, config_option, output_option
from retrieval_eval.cli.sets_cmd import sets

if TYPE_CHECKING:
    from retrieval_eval.golden.models import GoldenQuestionSet

EXISTING_FILE = click.Path(exists=True, dir_okay=False)


def _grade_map(
    ctx: click.Context, param: click.Parameter, value: str | None
) -> dict[int, int] | None:
    """``--grade-map 4=3,3=2``: relevance code -> grade (an integer >= 0)."""
    if value is None:
        return None
    mapping: dict[int, int] = {}
    for part in filter(None, (p.strip() for p in value.split(","))):
        code, sep, grade = part.partition("=")
        try:
            pair = int(code), int(grade)
        except ValueError:
            pair = None
        if not sep or pair is None or pair[1] < 0:
            raise click.BadParameter(
                f"expected CODE=GRADE with a grade >= 0, such as 4=3, got {part!r}"
            )
        mapping[pair[0]] = pair[1]
    return mapping


def _import_options(command: Any) -> Any:
    """The options both importers share."""
    for option in reversed(
        [
            click.option(
                "--output",
                "-o",
                type=click.Path(dir_okay=False),
                default=None,
                help="Set file to write (.yaml or .json; default: ./<identifier>.yaml).",
            ),
            click.option(
                "--min-relevance",
                type=int,
                default=1,
                show_default=True,
                help="Judgments below this relevance are not targets (0 and -1 codes).",
            ),
            click.option(
                "--grade-map",
                callback=_grade_map,
                default=None,
                metavar="CODE=GRADE,...",
                help="Map the qrels' relevance codes to grades (integers >= 0) before they are "
                "kept, e.g. 4=3,3=2,2=1 (default: a code is its grade, nDCG's gain, as in trec_eval).",
            ),
            click.option(
                "--forms",
                type=EXISTING_FILE,
                default=None,
                help="Question id -> form (YAML/JSON mapping, or CSV/TSV with id,form); "
                "unlisted questions are 'match'.",
            ),
            click.option(
                "--hard-class-from",
                default=None,
                metavar="FIELD",
                help="Take each question's hard class from this query field "
                "(top level, else under 'metadata').",
            ),
            click.option("--name", default=None, help="The set's display name."),
            click.option("--force", is_flag=True, help="Overwrite an existing output file."),
        ]
    ):
        command = option(command)
    return command


def _import_and_write(build: Any, *args: Any, **options: Any) -> None:
    """Run an importer with the shared options, then write the set (never over a file unless
    ``--force``) and say what was written."""
    from retrieval_eval.errors import InvalidInputError
    from retrieval_eval.golden.importers import read_forms
    from retrieval_eval.golden.loaders import dump_golden_set

    output, force, forms = options.pop("output"), options.pop("force"), options.pop("forms")
    options_corpus: Path | None = options.pop("corpus", None)
    golden_set: GoldenQuestionSet = build(
        *args, forms=read_forms(forms) if forms else None, **options
    )
    path = Path(output or f"{golden_set.identifier}.yaml")
    if path.exists() and not force:
        raise InvalidInputError(f"{path} already exists; pass --force to overwrite it")
    from retrieval_eval.cli.output_file import output_errors

    with output_errors(str(path), "--output"):
        dump_golden_set(golden_set, path)
    targets = sum(len(q.expected_document_ids) for q in golden_set.questions)
    graded = sum(len(q.grades or ()) for q in golden_set.questions)
    click.echo(
        f"wrote {path}: set {golden_set.identifier!r}, {len(golden_set.questions)} questions, "
        f"{targets} targets" + (f", {graded} judgment(s) graded other than 1" if graded else "")
    )
    click.echo(golden_set.description)
    click.echo(_how_to_use(golden_set.identifier, path, options_corpus))


def _how_to_use(identifier: str, path: Path, corpus: Path | None) -> str:
    """What to type next: the config lines that register the set (and, for a BEIR folder with
    a ``corpus.jsonl``, a BM25 retriever over it) and the exact ``run`` command.

    Paths are written relative to the config the commands would read (``--config`` aside:
    ``$RETRIEVAL_EVAL_CONFIG``, else ``./retrieval_eval.yaml``), as the config resolves them.
    """
    import json
    import os
    import re

    from retrieval_eval.config.lookup import DEFAULT_CONFIG_NAME, find_config

    config = find_config() or Path(DEFAULT_CONFIG_NAME)
    base = config.resolve().parent

    def rel(target: Path) -> str:
        target = target.resolve()
        if os.path.commonpath([target, base]) == target.anchor:  # nothing shared but the root
            text = target.as_posix()
        else:
            text = Path(os.path.relpath(target, base)).as_posix()
        # a JSON string is a YAML string: quoted only when a plain scalar could misread it
        return text if re.fullmatch(r"[\w./][\w./-]*", text) else json.dumps(text)

    retriever = f"{identifier.replace('.', '_')}_bm25" if corpus else "RETRIEVER"
    verb = "add to" if config.is_file() else "create"
    lines = ["", f"Next: {verb} {config} (paths relative to it):", "  sets:", f"    - {rel(path)}"]
    if corpus is not None:
        lines += ["  retrievers:", f"    {retriever}: {{type: lexical, corpus: {rel(corpus)}}}"]
    lines += ["then run:", f"  retrieval-eval run {identifier} {retriever}"]
    if corpus is None:
        lines.append(
            "(RETRIEVER: a name under 'retrievers:' in the config, or a module:function path)"
        )
    return "\n".join(lines)


@sets.command("import-beir")
@click.argument("directory", type=click.Path(exists=True, file_okay=False))
@click.option("--split", default="test", show_default=True, help="Reads qrels/<split>.tsv.")
@click.option("--identifier", default=None, help="Set identifier (default: <folder>.<split>).")
@_import_options
def import_beir_cmd(directory: str, **options: Any) -> None:
    """Turn a BEIR folder (queries.jsonl, qrels/<split>.tsv) into a golden set file."""
    from retrieval_eval.golden.importers import import_beir

    corpus = Path(directory) / "corpus.jsonl"
    _import_and_write(
        import_beir, directory, corpus=corpus if corpus.is_file() else None, **options
    )


@sets.command("import-trec")
@click.option(
    "--topics",
    type=EXISTING_FILE,
    required=True,
    help="TREC topics (SGML <top>), qid<TAB>text lines, or BEIR queries.jsonl.",
)
@click.option("--qrels", type=EXISTING_FILE, required=True, help="TREC qrels: qid iter docid rel.")
@click.option("--identifier", required=True, help="Set identifier, e.g. robust04.title.")
@click.option(
    "--topic-field",
    type=click.Choice(["title", "desc", "narr"]),
    default="title",
    show_default=True,
    help="Which SGML topic field is the question.",
)
@_import_options
def import_trec_cmd(topics: str, qrels: str, **options: Any) -> None:
    """Turn TREC topics and qrels into a golden set file."""
    from retrieval_eval.golden.importers import import_trec

    _import_and_write(import_trec, topics, qrels, **options)


@sets.command("export-qrels")
@click.argument("set_name", metavar="SET")
@output_option("Qrels file to write (default: stdout).")
@click.option(
    "--topics",
    type=click.Path(dir_okay=False),
    default=None,
    help="Also write the questions as qid<TAB>text topics to this file.",
)
@config_option
def export_qrels_cmd(
    set_name: str, output: str | None, topics: str | None, config_path: str | None
) -> None:
    """Write a golden set as TREC qrels (no-result questions have no lines)."""
    from retrieval_eval.cli.output_file import output_errors
    from retrieval_eval.config.models import load_config
    from retrieval_eval.golden.exporters import qrels_lines, topics_lines, write_lines
    from retrieval_eval.workflows.labelled_run import resolve_set

    golden_set = resolve_set(load_config(config_path), set_name)
    lines = qrels_lines(golden_set)
    skipped = sum(1 for q in golden_set.questions if q.is_no_result)
    note = f" ({skipped} no-result question(s) have no qrels)" if skipped else ""
    if topics:
        with output_errors(topics, "--topics"):
            write_lines(topics_lines(golden_set), topics)
        click.echo(f"wrote {topics}: {len(golden_set.questions)} topics", err=output is None)
    _emit(lines, output, f"qrels lines{note}")


@runs.command("export")
@click.argument("run_id", type=RUN_ID, metavar="RUN_ID")
@output_option("Run file to write (default: stdout).")
@click.option("--tag", default=None, help="The run tag column (default: the retriever's name).")
@db_option
@config_option
def export_run_cmd(
    run_id: int, output: str | None, tag: str | None, db: str | None, config_path: str | None
) -> None:
    """Write a stored run as a TREC run file (qid Q0 docid rank score tag).

    A stored run keeps the distinct documents to its deepest gated depth or cutoff (3 by
    default; 5 for depths 1,5): compare success@k with other tools up to that depth, not
    deeper metrics. Failed questions have no lines.
    """
    from retrieval_eval.reports.trec import run_lines
    from retrieval_eval.store.store import open_store_to_read

    with open_store_to_read(store_url_for(db, config_path)) as store:  # never creates one
        result = store.runs.get(run_id).result
    lines = run_lines(result, tag)
    errors = f"; {result.error_count} failed question(s) left out" if result.error_count else ""
    _emit(lines, output, f"run lines (to depth {result.settings.depth}{errors})")


old_command(cli, "export-run", export_run_cmd, "runs export")


def _emit(lines: list[str], output: str | None, what: str) -> None:
    """Lines to ``output``, or to stdout with the count on stderr so a pipe gets only lines."""
    from retrieval_eval.golden.exporters import write_lines

    if output is None:
        for line in lines:
            click.echo(line)
        click.echo(f"{len(lines)} {what}", err=True)
    else:
        from retrieval_eval.cli.output_file import output_errors

        with output_errors(output, "--output"):
            write_lines(lines, output)
        click.echo(f"wrote {output}: {len(lines)} {what}")
