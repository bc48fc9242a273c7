"""Reading golden sets from YAML, JSON, JSONL and CSV, reporting every problem of a file at once.

- YAML / JSON: a set document ``{identifier, name, description, corpus_revision, questions: [...]}``.
- JSONL: one question object per line.
- CSV: one question per row, header ``id,question,form,expected_document_ids,hard_class,answer_gist``;
  expected ids separated by ``|``.

For JSONL and CSV the set identifier comes from the ``identifier`` argument, else the file name
(``handbook-faq.csv`` becomes ``handbook_faq``).
"""

from __future__ import annotations

import csv
import io
import json
import re
from functools import partial
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from retrieval_eval.errors import GoldenSetError
from retrieval_eval.golden.models import GoldenQuestion, GoldenQuestionSet

SET_SUFFIXES = (".yaml", ".yml", ".json", ".jsonl", ".csv")
CSV_COLUMNS = ("id", "question", "form", "expected_document_ids", "hard_class", "answer_gist")
_SET_FIELDS = {"identifier", "name", "description", "corpus_revision", "questions"}


def load_golden_set(path: str | Path, identifier: str | None = None) -> GoldenQuestionSet:
    """Load and validate one set file; raise :class:`GoldenSetError` listing all its problems."""
    path = Path(path)
    if not path.is_file():
        raise GoldenSetError([f"{path}: no such file"])
    suffix = path.suffix.lower()
    if suffix not in SET_SUFFIXES:
        raise GoldenSetError(
            [f"{path}: unknown set format {suffix!r}; use one of {', '.join(SET_SUFFIXES)}"]
        )
    try:
        # utf-8-sig: spreadsheet exports start CSV files with a BOM that would hide the "id" column
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise GoldenSetError([f"{path}: cannot read the file ({exc})"]) from None
    from retrieval_eval.results import paused_gc

    # parsing and validating allocate a few objects per question and nothing cyclic; the
    # collector's full passes over them were a third of loading 20,000 questions
    with paused_gc():
        if suffix in (".jsonl", ".csv"):
            rows, lines, problems = (_read_jsonl if suffix == ".jsonl" else _read_csv)(path, text)
            data: dict[str, Any] = {
                "identifier": identifier or _identifier_from_name(path),
                "name": path.stem,
                "questions": rows,
            }
        else:
            data, lines, problems = _read_document(path, text, suffix)
            if identifier:
                data["identifier"] = identifier
        return validate_set_data(data, source=str(path), lines=lines, problems=problems)


def validate_set_data(
    data: dict[str, Any],
    source: str = "<data>",
    lines: list[int | None] | None = None,
    problems: list[str] | None = None,
) -> GoldenQuestionSet:
    """Validate a raw set mapping, collecting every problem with its question id and field."""
    problems = list(problems or [])
    identifier = data.get("identifier")
    if isinstance(identifier, str) and identifier.strip():
        # every message names the set as well as the file it came from
        source = f"{source} (set {identifier!r})"
    unknown = sorted(set(data) - _SET_FIELDS)
    if unknown:
        problems.append(
            f"{source}: unknown set field(s) {', '.join(map(repr, unknown))}; "
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
    elif not raw_questions:
        problems.append(f"{source}: the set has no questions; add at least one")

    questions: list[GoldenQuestion] = []
    seen: dict[str, int] = {}
    for index, raw in enumerate(raw_questions):
        # where() names the question in a problem: told only when there is one
        where = partial(_where, source, raw, index, lines)
        if not isinstance(raw, dict):
            problems.append(f"{where()}: expected a mapping of question fields")
            continue
        try:
            question = GoldenQuestion.model_validate(raw)
        except ValidationError as exc:
            problems.extend(f"{where()}: {_describe(err)}" for err in exc.errors())
            continue
        if question.id in seen:
            problems.append(
                f"{where()}: duplicate question id {question.id!r} (first at question "
                f"#{seen[question.id] + 1}); give each question its own id"
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


def _where(source: str, raw: Any, index: int, lines: list[int | None] | None) -> str:
    # the id when there is a usable one, else the 1-based position; the line when known
    line = lines[index] if lines and index < len(lines) else None
    qid = raw.get("id") if isinstance(raw, dict) else None
    line_note = f"line {line}" if line else ""
    if isinstance(qid, str) and qid.strip():
        place = ", ".join(filter(None, [f"#{index + 1}", line_note]))
        return f"{source}: question {qid.strip()!r} ({place})"
    return f"{source}: question #{index + 1}" + (f" ({line_note})" if line_note else "")


def _describe(err: Any) -> str:
    loc = ".".join(str(part) for part in err.get("loc", ()) if not isinstance(part, int))
    msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
    if err.get("type") == "enum":
        msg = f"unknown form {err.get('input')!r}; use 'match' or 'gap'"
    elif err.get("type") == "extra_forbidden":
        msg = "unknown field; allowed: " + ", ".join(CSV_COLUMNS)
    elif err.get("type") == "missing":
        msg = "is required"
    return f"field '{loc}': {msg}" if loc else msg


def _identifier_from_name(path: Path) -> str:
    return re.sub(r"[^a-z0-9_.]+", "_", path.stem.lower()).strip("_.") or "golden_set"


def _read_document(
    path: Path, text: str, suffix: str
) -> tuple[dict[str, Any], list[int | None], list[str]]:
    if suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise GoldenSetError(
                [f"{path}: line {exc.lineno}, column {exc.colno}: invalid JSON: {exc.msg}"]
            ) from None
        lines: list[int | None] = []
    else:
        try:
            node, data = _compose_and_construct(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
            problem = getattr(exc, "problem", None) or str(exc)
            raise GoldenSetError([f"{path}: {where}invalid YAML: {problem}"]) from None
        lines = _question_lines(node)
    if not isinstance(data, dict):
        raise GoldenSetError(
            [f"{path}: expected a set document with 'identifier' and a 'questions' list"]
        )
    return data, lines, []


# libyaml's loader is ~10x faster on large sets; the pure-Python one is the fallback
_SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _compose_and_construct(text: str) -> tuple[Any, Any]:
    """Parse once: the node tree (for question line numbers) and the data built from it."""
    loader = _SafeLoader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    finally:
        loader.dispose()
    return node, data


def _question_lines(node: Any) -> list[int | None]:
    if not isinstance(node, yaml.MappingNode):
        return []
    for key, value in node.value:
        if getattr(key, "value", None) == "questions" and isinstance(value, yaml.SequenceNode):
            return [item.start_mark.line + 1 for item in value.value]
    return []


_DECODER = json.JSONDecoder()
_JSON_WHITESPACE = " \t\n\r"


def _read_jsonl(path: Path, text: str) -> tuple[list[Any], list[int | None], list[str]]:
    rows: list[Any] = []
    lines: list[int | None] = []
    problems: list[str] = []
    decode = _DECODER.raw_decode
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        # json.loads(line) is raw_decode between JSON whitespace, whole line consumed; called
        # directly it skips two Python layers a line (~15 ms of 20,000 lines). Anything else
        # goes through json.loads, for its exact message.
        document = line.strip(_JSON_WHITESPACE)
        try:
            value, end = decode(document)
        except json.JSONDecodeError:
            end = -1
        try:
            rows.append(value if end == len(document) else json.loads(line))
            lines.append(number)
        except json.JSONDecodeError as exc:
            problems.append(f"{path}: line {number}: invalid JSON: {exc.msg}")
    return rows, lines, problems


def _read_csv(path: Path, text: str) -> tuple[list[Any], list[int | None], list[str]]:
    reader = csv.DictReader(io.StringIO(text))
    header = reader.fieldnames or []
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
            f"{path}: line 1: unknown CSV column(s) {', '.join(extra)}; allowed {', '.join(CSV_COLUMNS)}"
        ]
        if extra
        else []
    )
    rows: list[Any] = []
    lines: list[int | None] = []
    for row in reader:
        values = {k: (v if v is not None else "") for k, v in row.items() if k in CSV_COLUMNS}
        ids = values.get("expected_document_ids", "")
        values["expected_document_ids"] = (
            [part.strip() for part in ids.split("|")] if ids.strip() else []
        )
        for optional in ("hard_class", "answer_gist"):
            if not values.get(optional):
                values.pop(optional, None)
        rows.append(values)
        lines.append(reader.line_num)
    return rows, lines, problems


def dump_golden_set(golden_set: GoldenQuestionSet, path: str | Path) -> Path:
    """Write a set as YAML (or JSON for a ``.json`` path); the inverse of :func:`load_golden_set`."""
    path = Path(path)
    data = golden_set.model_dump(mode="json", exclude_none=True)
    for question in data["questions"]:
        question["expected_document_ids"] = list(question["expected_document_ids"])
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() == ".json":
        path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    else:
        path.write_text(
            yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100), encoding="utf-8"
        )
    return path
