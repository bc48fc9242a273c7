"""Reading golden sets from YAML, JSON, JSONL and CSV, reporting every problem of a file at once.

- YAML / JSON: a set document ``{identifier, name, description, corpus_revision, questions: [...]}``.
- JSONL: one question object per line.
- CSV: one question per row, header ``id,question,form,expected_document_ids,hard_class,answer_gist``
  (and an optional ``grades`` column); expected ids separated by ``|``, grades written
  ``a.md=2|b.md=0``.

For JSONL and CSV the set identifier comes from the ``identifier`` argument, else the file name
(``handbook-faq.csv`` becomes ``handbook_faq``).

Limits (:mod:`retrieval_eval.safety.limits`), each a :class:`GoldenSetError` naming the file and the
limit: a file over 256 MiB is refused unread; YAML anchors and aliases are refused; lists and
mappings nested more than 50 levels deep are refused (a JSON/YAML document, or a JSONL line, is
level 1); an integer longer than Python's int-to-text limit (4,300 digits) and a CSV cell longer
than csv's field limit (131,072 characters) are errors, as is any CSV syntax error (csv's strict
mode), at its line. Messages quote at most ~200 characters of any value.
"""

from __future__ import annotations

import csv
import io
import json
import re
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from retrieval_eval.errors import GoldenSetError
from retrieval_eval.golden.models import GoldenQuestion, GoldenQuestionSet
from retrieval_eval.safety.limits import (
    MAX_SET_FILE_BYTES,
    digits,
    nesting_exceeds,
    quote,
    quote_some,
    refuse_too_large,
    shorten,
    too_deep,
    too_long_integer,
)
from retrieval_eval.safety.surrogates import escaped, lone_surrogate

SET_SUFFIXES = (".yaml", ".yml", ".json", ".jsonl", ".csv")
CSV_COLUMNS = (
    "id", "question", "form", "expected_document_ids", "hard_class", "answer_gist", "grades"
)  # fmt: skip
_SET_FIELDS = set(GoldenQuestionSet.model_fields)  # one home: the model names them


def load_golden_set(path: str | Path, identifier: str | None = None) -> GoldenQuestionSet:
    """Load and validate one set file; raise :class:`GoldenSetError` listing all its problems."""
    path = Path(path)
    if not path.is_file():
        raise GoldenSetError([f"{path}: no such file"])
    suffix = path.suffix.lower()
    if suffix not in SET_SUFFIXES:
        raise GoldenSetError(
            [f"{path}: unknown set format {quote(suffix)}; use one of {', '.join(SET_SUFFIXES)}"]
        )
    try:
        refuse_too_large(path, MAX_SET_FILE_BYTES, "a set file", lambda m: GoldenSetError([m]))
        # utf-8-sig: spreadsheet exports start CSV files with a BOM that would hide the "id" column
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise GoldenSetError([f"{path}: cannot read the file ({shorten(str(exc))})"]) from None
    from retrieval_eval.safety.collector import paused_gc

    # parsing and validating allocate a few objects per question and nothing cyclic
    with paused_gc():
        return _load_text(path, text, suffix, identifier)


def _load_text(path: Path, text: str, suffix: str, identifier: str | None) -> GoldenQuestionSet:
    """The set in ``text``, read as ``suffix`` says; the collector is paused."""
    if suffix in (".jsonl", ".csv"):
        rows, lines, problems = (_read_jsonl if suffix == ".jsonl" else _read_csv)(path, text)
        data: dict[str, Any] = {
            "identifier": identifier or _identifier_from_name(path),
            "name": escaped(path.stem),  # documentation: a name that is not UTF-8, escaped
            "questions": rows,
        }
    else:
        data, lines, problems = _read_document(path, text, suffix)
        if identifier:
            data["identifier"] = identifier
    try:
        return validate_set_data(data, source=str(path), lines=lines, problems=problems)
    except GoldenSetError:
        # a valid set is at most 4 levels deep, so only a file that failed is measured: a
        # document past the limit is refused whole, a JSONL line past it on its own
        if suffix == ".csv":
            raise
        if suffix != ".jsonl":
            if nesting_exceeds(data):
                raise GoldenSetError([f"{path}: {too_deep()}"]) from None
            raise
        if not any(map(nesting_exceeds, data["questions"])):
            raise
        data["questions"], lines, problems = _read_jsonl(path, text, measure=True)
        return validate_set_data(data, source=str(path), lines=lines, problems=problems)


def validate_set_data(
    data: dict[str, Any],
    source: str = "<data>",
    lines: list[int | None] | None = None,
    problems: list[str] | None = None,
) -> GoldenQuestionSet:
    """Validate a raw set mapping, collecting every problem with its question id and field."""
    problems = list(problems or [])
    unread = bool(problems)  # the reader's problems: lines or rows it could not read
    identifier = data.get("identifier")
    if isinstance(identifier, str) and identifier.strip():
        # every message names the set as well as the file it came from
        source = f"{source} (set {quote(identifier)})"
    # in the file's order: YAML keys may be of any type (1, null, a date), not comparable
    unknown = [key for key in data if key not in _SET_FIELDS]
    if unknown:
        problems.append(
            f"{source}: unknown set field(s) {quote_some(unknown)}; "
            f"allowed: {', '.join(sorted(_SET_FIELDS))}"
        )
    if not isinstance(identifier, str):
        problems.append(f"{source}: field 'identifier' is missing; add e.g. 'identifier: my.set'")
    raw_questions = data.get("questions")
    if raw_questions is None:
        raw_questions = []
    if not isinstance(raw_questions, list):
        problems.append(f"{source}: field 'questions' must be a list of questions")
        raw_questions = []
    elif not raw_questions and not unread:  # else the unread lines may hold the questions
        problems.append(f"{source}: the set has no questions; add at least one")

    # a set with no problem is validated in one call; else each row on its own, for its problems
    fast = _valid_rows(raw_questions)
    questions: list[GoldenQuestion] = fast if fast is not None else []
    seen: dict[str, int] = {}
    for index, raw in enumerate(raw_questions if fast is None else ()):
        # _where() names the question in a problem: formatted only when there is one
        if not isinstance(raw, dict):
            where = _where(source, raw, index, lines)
            problems.append(f"{where}: expected a mapping of question fields")
            continue
        # a key that is no text: pydantic says only "unable to parse raw data as a unicode
        # string", naming no field; named here, and the row's other fields still validated
        odd = [key for key in raw if isinstance(key, str) and lone_surrogate(key)]
        if odd:
            where = _where(source, raw, index, lines)
            problems.extend(
                f"{where}: field {quote(key)}: unknown field (its name holds a lone surrogate, "
                f"which is not text); allowed: {', '.join(CSV_COLUMNS)}"
                for key in odd
            )
            raw = {key: value for key, value in raw.items() if key not in odd}
        try:
            question = GoldenQuestion.model_validate(raw)
        except ValidationError as exc:
            where = _where(source, raw, index, lines)
            problems.extend(f"{where}: {_describe(err)}" for err in exc.errors())
            continue
        if odd:
            continue
        if question.id in seen:
            problems.append(
                f"{_where(source, raw, index, lines)}: duplicate question id "
                f"{quote(question.id)} (first at question #{seen[question.id] + 1}); give each "
                "question its own id"
            )
            continue
        seen[question.id] = index
        questions.append(question)

    header = {k: v for k, v in data.items() if k in _SET_FIELDS - {"questions"}}
    if isinstance(identifier, str):
        try:
            GoldenQuestionSet.model_validate({**header, "questions": []})
        except ValidationError as exc:
            problems.extend(
                f"{source}: {_describe(err)}"
                for err in exc.errors()
                if "has no questions" not in err["msg"]
            )
    if problems:
        raise GoldenSetError(problems)
    return GoldenQuestionSet.model_validate({**header, "questions": questions})


@cache
def _rows() -> TypeAdapter[list[GoldenQuestion]]:
    """The validator of a file's rows, built at the first load."""
    return TypeAdapter(list[GoldenQuestion])


def _valid_rows(rows: list[Any]) -> list[GoldenQuestion] | None:
    """The questions of ``rows`` when no row has a problem and no id is given twice, else None."""
    if not rows:
        return None
    try:
        questions = _rows().validate_python(rows)
    except ValidationError:
        return None
    return questions if len({question.id for question in questions}) == len(questions) else None


def _where(source: str, raw: Any, index: int, lines: list[int | None] | None) -> str:
    # the id when there is a usable one, else the 1-based position; the line when known
    line = lines[index] if lines and index < len(lines) else None
    qid = raw.get("id") if isinstance(raw, dict) else None
    line_note = f"line {line}" if line else ""
    if isinstance(qid, str) and qid.strip():
        place = ", ".join(filter(None, [f"#{index + 1}", line_note]))
        return f"{source}: question {quote(qid.strip())} ({place})"
    return f"{source}: question #{index + 1}" + (f" ({line_note})" if line_note else "")


def _describe(err: Any) -> str:
    # loc holds the field's name, which may be any key of the file: quoted short like a value
    loc = shorten(".".join(str(part) for part in err.get("loc", ()) if not isinstance(part, int)))
    msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
    if err.get("type") == "invalid_key":  # a YAML key that is no text (1, null, a date)
        return f"field {quote(err.get('input'))}: unknown field; allowed: " + ", ".join(CSV_COLUMNS)
    elif err.get("type") == "extra_forbidden":
        msg = "unknown field; allowed: " + ", ".join(CSV_COLUMNS)
    elif err.get("type") == "missing":
        msg = "is required"
    return f"field '{loc}': {msg}" if loc else msg


def _identifier_from_name(path: Path) -> str:
    return re.sub(r"[^a-z0-9_.]+", "_", path.stem.lower()).strip("_.") or "golden_set"


class _IntegerTooLong(ValueError):
    """An integer literal past Python's int-to-text limit (json's parse_int hook raises it)."""

    def __init__(self, literal: str) -> None:
        super().__init__(too_long_integer(digits(literal)))


def _parse_int(literal: str) -> int:
    try:
        return int(literal)
    except ValueError:
        raise _IntegerTooLong(literal) from None


# json's decoder, but for integers, which it would let int() refuse with a ValueError naming
# sys.set_int_max_str_digits(); sets seldom hold integers, so the hook is seldom called
_DECODER = json.JSONDecoder(parse_int=_parse_int)


def _read_document(
    path: Path, text: str, suffix: str
) -> tuple[dict[str, Any], list[int | None], list[str]]:
    if suffix == ".json":
        try:
            data = json.loads(text, parse_int=_parse_int)
        except json.JSONDecodeError as exc:
            raise GoldenSetError(
                [f"{path}: line {exc.lineno}, column {exc.colno}: invalid JSON: {exc.msg}"]
            ) from None
        except _IntegerTooLong as exc:
            raise GoldenSetError([f"{path}: {exc}"]) from None
        except RecursionError:  # past ~1,000 levels: json's recursion, not our measure
            raise GoldenSetError([f"{path}: {too_deep()}"]) from None
        lines: list[int | None] = []
    else:
        # PyYAML for YAML files only: JSONL, CSV and JSON sets never import it
        import yaml

        from retrieval_eval.safety.yaml_input import describe as describe_yaml_error
        from retrieval_eval.safety.yaml_input import load_set_yaml

        try:
            node, data = load_set_yaml(text)
        except (yaml.YAMLError, RecursionError) as exc:
            raise GoldenSetError([f"{path}: {describe_yaml_error(exc)}"]) from None
        lines = _question_lines(node)
    if not isinstance(data, dict):
        raise GoldenSetError(
            [f"{path}: expected a set document with 'identifier' and a 'questions' list"]
        )
    return data, lines, []


def _question_lines(node: Any) -> list[int | None]:
    import yaml

    if not isinstance(node, yaml.MappingNode):
        return []
    for key, value in node.value:
        if getattr(key, "value", None) == "questions" and isinstance(value, yaml.SequenceNode):
            return [item.start_mark.line + 1 for item in value.value]
    return []


_JSON_WHITESPACE = " \t\n\r"


def _read_jsonl(
    path: Path, text: str, measure: bool = False
) -> tuple[list[Any], list[int | None], list[str]]:
    """Rows, their lines, and the problems of lines that are no JSON (or, with ``measure``, that
    nest past the limit)."""
    rows: list[Any] = []
    lines: list[int | None] = []
    problems: list[str] = []
    decode = _DECODER.raw_decode
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        # json.loads(line) is raw_decode between JSON whitespace, whole line consumed; called
        # directly it skips two Python layers a line. Anything else goes through json.loads,
        # for its exact message.
        document = line.strip(_JSON_WHITESPACE)
        try:
            value, end = decode(document)
        except json.JSONDecodeError:
            end = -1
        except (_IntegerTooLong, RecursionError) as exc:  # json.loads would raise the same
            problems.append(f"{path}: line {number}: {_unreadable(exc)}")
            continue
        try:
            if end != len(document):
                value = json.loads(line, parse_int=_parse_int)
        except json.JSONDecodeError as exc:
            problems.append(f"{path}: line {number}: invalid JSON: {exc.msg}")
            continue
        except (_IntegerTooLong, RecursionError) as exc:
            problems.append(f"{path}: line {number}: {_unreadable(exc)}")
            continue
        if measure and nesting_exceeds(value):
            problems.append(f"{path}: line {number}: {too_deep()}")
            continue
        rows.append(value)
        lines.append(number)
    return rows, lines, problems


def _unreadable(exc: Exception) -> str:
    # RecursionError: json's own, past ~1,000 levels (the limit is far below)
    return too_deep() if isinstance(exc, RecursionError) else str(exc)


def _read_csv(path: Path, text: str) -> tuple[list[Any], list[int | None], list[str]]:
    # strict: a stray or unclosed quote is a CSV error at its line, not a row of shifted cells
    reader = csv.DictReader(io.StringIO(text), strict=True)
    try:
        header = reader.fieldnames or []
    except csv.Error as exc:
        raise GoldenSetError([_csv_problem(path, 1, exc)]) from None
    missing = [c for c in ("id", "question", "form") if c not in header]
    if missing:
        raise GoldenSetError(
            [
                f"{path}: line 1: CSV header lacks column(s) {', '.join(missing)}; "
                f"expected {','.join(CSV_COLUMNS)}"
            ]
        )
    extra = [c for c in header if c not in CSV_COLUMNS]
    problems = (
        [
            f"{path}: line 1: unknown CSV column(s) {', '.join(map(shorten, extra[:5]))}"
            f"{f' and {len(extra) - 5:,} more' if len(extra) > 5 else ''}; "
            f"allowed {', '.join(CSV_COLUMNS)}"
        ]
        if extra
        else []
    )
    rows: list[Any] = []
    lines: list[int | None] = []
    while True:
        starts_at = reader.line_num + 1  # a record may span lines (a quoted line break)
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            # the reader cannot resync after a syntax error: the rest of the file is unread
            problems.append(_csv_problem(path, starts_at, exc))
            break
        values = {k: (v if v is not None else "") for k, v in row.items() if k in CSV_COLUMNS}
        ids = values.get("expected_document_ids", "")
        values["expected_document_ids"] = (
            [part.strip() for part in ids.split("|")] if ids.strip() else []
        )
        for optional in ("hard_class", "answer_gist", "grades"):
            if not values.get(optional):
                values.pop(optional, None)
        if "grades" in values:
            grades, bad = _csv_grades(values["grades"])
            if bad is not None:
                problems.append(
                    f"{path}: line {reader.line_num}: field 'grades': {quote(bad)} is not "
                    "doc-id=grade; write grades as a.md=2|b.md=0"
                )
                values.pop("grades")
            else:
                values["grades"] = grades
        rows.append(values)
        lines.append(reader.line_num)
    return rows, lines, problems


def _csv_grades(cell: str) -> tuple[dict[str, Any], str | None]:
    """A CSV grades cell (``a.md=2|b.md=0``) as a mapping the model checks, or the first part
    that is no ``doc-id=grade`` pair; a grade that is no integer is left for the model to name."""
    grades: dict[str, Any] = {}
    for part in filter(str.strip, cell.split("|")):
        doc_id, sep, grade = part.rpartition("=")
        if not sep:
            return {}, part
        text = grade.strip()
        grades[doc_id] = int(text) if text.isdigit() and len(text) < 4 else text
    return grades, None


def _csv_problem(path: Path, line: int, exc: csv.Error) -> str:
    text = str(exc)
    if text == "unexpected end of data":
        text += " (a quoted field is never closed)"
    return f"{path}: line {line}: invalid CSV: {shorten(text)}"


def dump_golden_set(golden_set: GoldenQuestionSet, path: str | Path) -> Path:
    """Write a set as YAML (or JSON for a ``.json`` path); the inverse of :func:`load_golden_set`.
    Written whole or not at all (:func:`retrieval_eval.safety.files.write_file`): a file that
    cannot be written is a ``FileWriteError`` naming it, and an old file there is unchanged."""
    from retrieval_eval.safety.files import write_file

    path = Path(path)
    data = golden_set.model_dump(mode="json", exclude_none=True)
    for question in data["questions"]:
        question["expected_document_ids"] = list(question["expected_document_ids"])
    if path.suffix.lower() == ".json":
        from retrieval_eval.formats.jsonio import dumps

        text = dumps(data) + "\n"
    else:
        import yaml

        text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
    return write_file(path, text, make_folder=True)
