"""Judgments files: the documents to judge per question, filled in by people and read back.

One row per (question, document, rater): ``question_id`` (a question of the set) or ``question``
(the text of a new one), ``document_id``, ``grade`` (0 not relevant, 1 relevant, 2 highly, 3
perfectly; empty: not judged yet), ``rater``, ``time``, ``note``, ``source`` (where the
candidate came from: a retriever and rank, a lint check, a replay) and ``text`` (the document's
text for the rater, its first 500 characters cut at a word, `` …`` marking a cut; only where the
retriever can give texts; never read back as a label). ``sets pool`` writes it with
empty grades; a spreadsheet, Label Studio, Argilla or a script fills it in; ``sets judge import``
reads it back (JSONL or CSV), every bad row named by file and line.

Several raters on one pair: :func:`summarise` measures agreement (Cohen's κ for two raters,
Krippendorff's α, ordinal, beyond), lists the conflicts (grades more than one apart, or on both
sides of the relevance level), and merges each pair by :func:`retrieval_eval.labels.agreement.merged_grade`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from retrieval_eval.errors import GoldenSetError

FIELDS = (
    "question_id",
    "question",
    "document_id",
    "grade",
    "rater",
    "time",
    "note",
    "source",
    "text",
)
MAX_PROBLEMS = 20
Text = Annotated[str, Field(min_length=1, max_length=10_000)]


class Judgment(BaseModel):
    """One row of a judgments file."""

    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)

    question_id: Text | None = None
    question: Text | None = None
    document_id: Text
    grade: Annotated[int, Field(ge=0, le=3)] | None = None
    rater: Text | None = None
    time: datetime | None = None
    note: str | None = None
    source: str | None = None
    text: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _blanks_are_missing(cls, value: Any) -> Any:
        if isinstance(value, dict):  # a spreadsheet writes empty cells, not nulls
            return {k: (None if v == "" else v) for k, v in value.items()}
        return value

    @model_validator(mode="after")
    def _names_a_question(self) -> Judgment:
        if self.question_id is None and self.question is None:
            raise ValueError("give 'question_id' (a question of the set) or 'question' (a new one)")
        return self

    @property
    def question_key(self) -> str:
        """What joins the rows of one question: its id, else ``text:`` and its text."""
        return self.question_id if self.question_id is not None else f"text:{self.question}"


_ROWS = TypeAdapter(list[Judgment])


def read_judgments(path: Path) -> list[Judgment]:
    """The rows of a JSONL or CSV judgments file; a :class:`GoldenSetError` names each bad row."""
    return [row for _, row in read_judgment_lines(path)]


def read_judgment_lines(path: Path) -> list[tuple[int, Judgment]]:
    """:func:`read_judgments` with each row's line number (for messages about a row's values)."""
    from retrieval_eval.safety.records import read_records, row_errors

    raw, lines = read_records(path, "judgments file", GoldenSetError)
    if path.suffix.lower() == ".csv":  # a cell written as text by our CSV writer, given back
        from retrieval_eval.formats.csv_cells import read_cell

        raw = [{k: read_cell(v) for k, v in row.items()} for row in raw]
    try:
        return list(zip(lines, _ROWS.validate_python(raw), strict=True))
    except ValidationError as exc:
        problems = []
        for line, field, msg in row_errors(exc, lines, MAX_PROBLEMS):
            message = msg.removeprefix("Value error, ")
            if field == "grade":
                message += " (grades are 0 to 3, or empty for not judged yet)"
            problems.append(f"{path}: line {line}: {field}: {message}")
        raise GoldenSetError(problems) from None


SUFFIXES = (".jsonl", ".csv")


def check_suffix(path: Path, option: str) -> None:
    """A judgments file ends in ``.jsonl`` or ``.csv`` (what ``sets judge import`` reads): any
    other suffix is exit 2 naming it, before anything is computed."""
    from retrieval_eval.errors import InvalidInputError
    from retrieval_eval.safety.limits import quote

    if path.suffix.lower() not in SUFFIXES:
        raise InvalidInputError(
            f"{option} {path}: a judgments file ends in .jsonl or .csv, not "
            f"{quote(path.suffix) if path.suffix else 'no suffix'}: name it e.g. "
            f"{path.with_suffix('.csv').name}"
        )


def write_judgments(rows: Iterable[Judgment], path: Path) -> int:
    """Write rows as JSONL or CSV by the file's suffix; returns how many."""
    return write_records([row.model_dump(mode="json") for row in rows], path)


def write_records(records: Sequence[dict[str, Any]], path: Path) -> int:
    """Judgments rows as plain mappings (fields of :data:`FIELDS`), written whole
    (:func:`retrieval_eval.safety.files.write_file`): CSV for a ``.csv`` path (the project's
    CSV writer: a text that would start a formula is escaped, and read back as it was), else
    JSONL; returns how many."""
    from retrieval_eval.safety.files import write_file

    if path.suffix.lower() == ".csv":
        from retrieval_eval.formats.csv_cells import csv_text

        write_file(path, csv_text(FIELDS, ([r.get(k) for k in FIELDS] for r in records)))
    else:
        import orjson

        write_file(path, b"".join(orjson.dumps(r) + b"\n" for r in records))
    return len(records)


@dataclass(frozen=True, slots=True)
class Conflict:
    """A pair whose raters disagree enough to look at again."""

    question_key: str
    document_id: str
    grades: dict[str, int]


@dataclass(frozen=True, slots=True)
class Summary:
    """What a set of judgments says, merged."""

    merged: dict[tuple[str, str], int]  # (question key, document id) -> merged grade
    open: list[tuple[str, str]]  # pairs no one has graded yet
    raters: list[str]
    kappa: float | None  # two raters: Cohen's κ (quadratic weights) over the pairs both graded
    alpha: float | None  # Krippendorff's α (ordinal) over every pair graded twice or more
    conflicts: list[Conflict]
    shared: int = 0  # pairs graded by two raters or more (what κ and α are measured over)


def summarise(rows: Sequence[Judgment], relevance_level: int = 1) -> Summary:
    """Merge the graded rows per pair and measure how far the raters agree."""
    from retrieval_eval.labels.agreement import cohen_kappa, krippendorff_alpha, merged_grade

    by_pair: dict[tuple[str, str], dict[str, int]] = defaultdict(dict)
    pairs: dict[tuple[str, str], None] = {}
    for row in rows:
        pair = (row.question_key, row.document_id)
        pairs[pair] = None
        if row.grade is not None:
            by_pair[pair][row.rater or "anonymous"] = row.grade  # a rater's later row wins
    raters = sorted({r for grades in by_pair.values() for r in grades})
    kappa = None
    if len(raters) == 2:
        both = [g for g in by_pair.values() if len(g) == 2]
        if both:
            value = cohen_kappa(
                [g[raters[0]] for g in both], [g[raters[1]] for g in both], "quadratic"
            )
            kappa = None if value != value else value
    alpha = None
    if len(raters) >= 2:
        value = krippendorff_alpha(by_pair, "ordinal")  # type: ignore[arg-type]
        alpha = None if value != value else value
    conflicts = [
        Conflict(pair[0], pair[1], dict(grades))
        for pair, grades in by_pair.items()
        if len(grades) >= 2
        and (
            max(grades.values()) - min(grades.values()) > 1
            or (min(grades.values()) < relevance_level <= max(grades.values()))
        )
    ]
    return Summary(
        merged={pair: merged_grade(list(g.values())) for pair, g in by_pair.items()},
        open=[pair for pair in pairs if pair not in by_pair],
        raters=raters,
        kappa=kappa,
        alpha=alpha,
        conflicts=conflicts,
        shared=sum(1 for grades in by_pair.values() if len(grades) >= 2),
    )
