"""Golden sets from public test collections: BEIR folders and TREC topics + qrels.

- :func:`import_beir`: ``DIR/queries.jsonl`` (``_id``, ``text``, ``metadata``) and
  ``DIR/qrels/<split>.tsv`` (``query-id corpus-id score``, header optional).
- :func:`import_trec`: a topics file and a qrels file (``qid iter docid relevance``).

Rules, the same for both:

- A judgment is a target only when its relevance is at least ``min_relevance`` (default 1):
  real collections carry 0 ("judged not relevant") and negative codes (Cranfield's -1).
- Grades are kept: a target's grade is its relevance code, at least 1 and as high as the
  collection goes (nDCG's gain, as in trec_eval; ``grade_map`` maps codes first, e.g.
  ``{4: 3, 3: 2, 2: 1}``), a judgment below ``min_relevance`` is grade 0 (judged, not a target).
  ``expected_document_ids`` lists the targets as before; ``grades`` is written only for the
  judgments whose grade is not 1, so a binary collection imports as it always has.
- Every judged query becomes a question, as trec_eval counts it (its ``num_q``). A query judged
  but with no target keeps its grade-0 judgments and no target: recall, MRR and nDCG count it
  0; the hit rates score it as a no-result question. The set's description says how many.
- Questions keep the order of the queries/topics file; targets the order of the qrels file.
- Forms: ``match`` unless a forms file (:func:`read_forms`) says otherwise.
- ``hard_class_from``: a query field (top level, else inside ``metadata``) whose scalar value
  becomes the hard class; empty or missing values leave the question without a class.
- A qrels line naming a query the queries/topics file lacks is an error naming the line.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from retrieval_eval.errors import InvalidInputError
from retrieval_eval.golden.loaders import validate_set_data
from retrieval_eval.golden.models import GoldenQuestionSet, QuestionForm
from retrieval_eval.safety.limits import (
    MAX_SET_FILE_BYTES,
    quote,
    quote_some,
    refuse_too_large,
    shorten,
)
from retrieval_eval.safety.surrogates import escaped
from retrieval_eval.safety.yaml_input import describe as describe_yaml_error
from retrieval_eval.safety.yaml_input import load_set_yaml

Qrels = dict[str, dict[str, int]]


def import_beir(
    directory: str | Path,
    split: str = "test",
    identifier: str | None = None,
    *,
    min_relevance: int = 1,
    forms: Mapping[str, QuestionForm] | None = None,
    hard_class_from: str | None = None,
    name: str | None = None,
    grade_map: Mapping[int, int] | None = None,
) -> GoldenQuestionSet:
    """A golden set from a BEIR folder; ``identifier`` defaults to ``<folder>.<split>``."""
    directory = Path(directory)
    queries_path = directory / "queries.jsonl"
    qrels_path = directory / "qrels" / f"{split}.tsv"
    for path in (queries_path, qrels_path):
        if not path.is_file():
            splits = sorted(p.stem for p in (directory / "qrels").glob("*.tsv"))
            raise InvalidInputError(
                f"{path}: no such file; a BEIR folder holds queries.jsonl and qrels/<split>.tsv"
                + (f" (splits here: {', '.join(splits)})" if splits else "")
            )
    identifier = identifier or _identifier(f"{directory.resolve().name}.{split}")
    return build_set(
        read_beir_queries(queries_path),
        read_qrels(qrels_path),
        identifier=identifier,
        name=name or f"{directory.name} ({split})",
        origin=f"BEIR folder {directory}, split {split!r}",
        min_relevance=min_relevance,
        forms=forms,
        hard_class_from=hard_class_from,
        qrels_source=str(qrels_path),
        grade_map=grade_map,
    )


def import_trec(
    topics: str | Path,
    qrels: str | Path,
    identifier: str,
    *,
    min_relevance: int = 1,
    forms: Mapping[str, QuestionForm] | None = None,
    hard_class_from: str | None = None,
    topic_field: str = "title",
    name: str | None = None,
    grade_map: Mapping[int, int] | None = None,
) -> GoldenQuestionSet:
    """A golden set from TREC topics (see :func:`read_topics`) and a qrels file."""
    topics, qrels = Path(topics), Path(qrels)
    return build_set(
        read_topics(topics, field=topic_field),
        read_qrels(qrels),
        identifier=identifier,
        name=name or identifier,
        origin=f"TREC topics {topics} and qrels {qrels}",
        min_relevance=min_relevance,
        forms=forms,
        hard_class_from=hard_class_from,
        qrels_source=str(qrels),
        grade_map=grade_map,
    )


def build_set(
    queries: Mapping[str, Mapping[str, Any]],
    qrels: Qrels,
    *,
    identifier: str,
    name: str,
    origin: str,
    min_relevance: int = 1,
    forms: Mapping[str, QuestionForm] | None = None,
    hard_class_from: str | None = None,
    qrels_source: str = "<qrels>",
    grade_map: Mapping[int, int] | None = None,
) -> GoldenQuestionSet:
    """Join queries (id -> ``{"text", "metadata", ...}``) with qrels under the rules above."""
    unknown = [qid for qid in qrels if qid not in queries]
    if unknown:
        raise InvalidInputError(
            f"{qrels_source}: {len(unknown)} query id(s) have judgments but no query text, "
            f"e.g. {quote_some(unknown)}; check the queries/topics file"
        )
    forms = forms or {}
    codes = _checked_map(grade_map)
    questions: list[dict[str, Any]] = []
    untargeted = 0
    for qid, query in queries.items():
        if qid not in qrels:
            continue
        grades = _grades(qrels[qid], min_relevance, codes)
        targets = [doc for doc, grade in grades.items() if grade >= 1]
        untargeted += not targets
        question: dict[str, Any] = {
            "id": qid,
            "question": query.get("text", ""),
            "form": forms.get(qid, QuestionForm.MATCH),
            "expected_document_ids": targets,
        }
        graded = {doc: grade for doc, grade in grades.items() if grade != 1}
        if graded:
            question["grades"] = graded
        if hard_class_from:
            hard_class = _field(query, hard_class_from, qid)
            if hard_class:
                question["hard_class"] = hard_class
        questions.append(question)
    if untargeted == len(questions):
        raise InvalidInputError(
            f"{qrels_source}: no query has a judgment with relevance >= {min_relevance}; "
            "lower --min-relevance or check the qrels file"
        )
    description = (
        f"Imported from {origin}; targets are judgments with relevance >= {min_relevance}"
        + (
            f"; {untargeted} judged quer{'y' if untargeted == 1 else 'ies'} without a target "
            "(0 in recall, MRR and nDCG)"
            if untargeted
            else ""
        )
        + "."
    )
    # both are documentation, and may come from a folder's name with a byte that is not UTF-8:
    # written escaped, not refused
    data = {"identifier": identifier, "name": escaped(name), "description": escaped(description)}
    return validate_set_data({**data, "questions": questions}, source=qrels_source)


def _grades(
    judged: Mapping[str, int], min_relevance: int, grade_map: Mapping[int, int]
) -> dict[str, int]:
    """A query's judgments as grades (the rules above), in the qrels file's order."""
    grades: dict[str, int] = {}
    for doc, rel in judged.items():
        if rel < min_relevance:
            grades[doc] = 0
        elif rel in grade_map:
            grades[doc] = grade_map[rel]
        else:
            grades[doc] = max(rel, 1)
    return grades


def _checked_map(grade_map: Mapping[int, int] | None) -> Mapping[int, int]:
    """The grade map, each grade a non-negative integer, or InvalidInputError naming the first
    that is not."""
    for code, grade in (grade_map or {}).items():
        if isinstance(grade, bool) or not isinstance(grade, int) or grade < 0:
            raise InvalidInputError(
                f"grade map: code {code} maps to {quote(grade)}; a grade is an integer >= 0"
            )
    return grade_map or {}


def read_qrels(path: str | Path) -> Qrels:
    """``qid -> {docid: relevance}`` from BEIR TSV (3 columns) or TREC qrels (4 columns).

    A BEIR header line (``query-id corpus-id score``) is skipped, and so is a line starting
    with ``#`` (a comment, as trec_eval reads it). A document judged twice for a query keeps its
    last judgment, as trec_eval does.
    """
    path = Path(path)
    text = _read_text(path, "qrels")
    qrels: Qrels = {}
    for number, line in enumerate(text.splitlines(), start=1):
        parts = line.split()
        if not parts or line.startswith("#"):
            continue
        if number == 1 and parts[0].lower() in ("query-id", "query_id", "qid"):
            continue
        if len(parts) not in (3, 4):
            raise InvalidInputError(
                f"{path}: line {number}: expected 'qid docid relevance' (BEIR) or "
                f"'qid iter docid relevance' (TREC), got {len(parts)} columns"
            )
        qid, doc, rel = (
            (parts[0], parts[1], parts[2]) if len(parts) == 3 else (parts[0], parts[2], parts[3])
        )
        try:
            qrels.setdefault(qid, {})[doc] = int(float(rel))
        except ValueError:
            raise InvalidInputError(
                f"{path}: line {number}: relevance {quote(rel)} is not a number"
            ) from None
    if not qrels:
        raise InvalidInputError(f"{path}: the qrels file holds no judgments")
    return qrels


def read_beir_queries(path: str | Path) -> dict[str, dict[str, Any]]:
    """``qid -> query object`` from a BEIR ``queries.jsonl`` (``_id``, ``text``, ``metadata``)."""
    path = Path(path)
    queries: dict[str, dict[str, Any]] = {}
    for number, line in enumerate(_read_text(path, "queries").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            qid = str(row.get("_id", row.get("query_id")))
            text = row["text"]
        # ValueError: invalid JSON, or an integer past the int-to-text limit; RecursionError:
        # nesting past ~1,000 levels
        except (ValueError, AttributeError, KeyError, RecursionError) as exc:
            reason = "nested too deep" if isinstance(exc, RecursionError) else shorten(str(exc))
            raise InvalidInputError(
                f"{path}: line {number}: expected a JSON object with '_id' and 'text' ({reason})"
            ) from None
        if qid in queries:
            raise InvalidInputError(f"{path}: line {number}: query id {quote(qid)} appears twice")
        queries[qid] = {**row, "text": str(text)}
    return queries


_TOP = re.compile(r"<top>(.*?)</top>", re.DOTALL | re.IGNORECASE)
_TAG = re.compile(r"<(num|title|desc|narr)>", re.IGNORECASE)


def read_topics(path: str | Path, field: str = "title") -> dict[str, dict[str, Any]]:
    """``qid -> {"text": ...}`` from a TREC topics file.

    Accepted: classic SGML (``<top> <num> Number: 401 <title> ... </top>``; ``field`` picks
    ``title``, ``desc`` or ``narr``), a ``.jsonl`` file of BEIR-style queries, or tab-separated
    ``qid<TAB>text`` lines (``.tsv`` / ``.txt``).
    """
    path = Path(path)
    if path.suffix.lower() == ".jsonl":
        return read_beir_queries(path)
    text = _read_text(path, "topics")
    if "<top>" in text.lower():
        return _read_sgml_topics(path, text, field)
    topics: dict[str, dict[str, Any]] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        qid, tab, query = line.partition("\t")
        if not tab or not qid.strip() or not query.strip():
            raise InvalidInputError(
                f"{path}: line {number}: expected 'qid<TAB>query text' (or SGML <top> topics)"
            )
        if qid.strip() in topics:
            raise InvalidInputError(
                f"{path}: line {number}: topic {quote(qid.strip())} appears twice"
            )
        topics[qid.strip()] = {"text": query.strip()}
    if not topics:
        raise InvalidInputError(f"{path}: the topics file holds no topics")
    return topics


def _read_sgml_topics(path: Path, text: str, field: str) -> dict[str, dict[str, Any]]:
    topics: dict[str, dict[str, Any]] = {}
    for index, block in enumerate(_TOP.findall(text), start=1):
        parts = _TAG.split(block)
        fields = {
            parts[i].lower(): " ".join(parts[i + 1].split()) for i in range(1, len(parts) - 1, 2)
        }
        num = re.sub(r"^number:\s*", "", fields.get("num", ""), flags=re.IGNORECASE).strip()
        value = re.sub(
            r"^(description|narrative|topic):\s*", "", fields.get(field, ""), flags=re.IGNORECASE
        ).strip()
        if not num or not value:
            raise InvalidInputError(
                f"{path}: topic #{index}: needs <num> and a non-empty <{field}>"
            )
        topics[num] = {"text": value, **{k: v for k, v in fields.items() if k != "num"}}
    return topics


def read_forms(path: str | Path) -> dict[str, QuestionForm]:
    """Question id -> form, from a YAML/JSON mapping or a CSV/TSV with ``id`` and ``form`` columns."""
    path = Path(path)
    text = _read_text(path, "forms")
    suffix = path.suffix.lower()
    rows: list[tuple[str, Any, str]] = []
    if suffix in (".csv", ".tsv"):
        reader = csv.DictReader(io.StringIO(text), delimiter="\t" if suffix == ".tsv" else ",")
        try:
            if not {"id", "form"} <= set(reader.fieldnames or []):
                raise InvalidInputError(f"{path}: line 1: the header needs columns 'id' and 'form'")
            rows = [(str(r["id"]).strip(), r["form"], f"line {reader.line_num}") for r in reader]
        except csv.Error as exc:  # e.g. a cell past csv's field limit (131,072 characters)
            raise InvalidInputError(
                f"{path}: line {reader.line_num + 1}: invalid CSV: {shorten(str(exc))}"
            ) from None
    else:
        try:
            _, data = load_set_yaml(text)  # a set file's limits: no aliases, bounded integers
        except (yaml.YAMLError, RecursionError) as exc:
            raise InvalidInputError(f"{path}: {describe_yaml_error(exc)}") from None
        if not isinstance(data, dict):
            raise InvalidInputError(f"{path}: expected a mapping of question id to form")
        rows = [(str(k), v, f"question {quote(k)}") for k, v in data.items()]
    forms: dict[str, QuestionForm] = {}
    for qid, value, where in rows:
        # only text reaches the Enum: its error message would repr() any value, however large
        form = QuestionForm._missing_(value) if isinstance(value, str) else None
        if form is None:
            raise InvalidInputError(
                f"{path}: {where}: unknown form {quote(value)}; use 'match' or 'gap'"
            )
        forms[qid] = form
    return forms


def _field(query: Mapping[str, Any], name: str, qid: str) -> str | None:
    metadata = query.get("metadata")
    value = query.get(name)
    if value is None and isinstance(metadata, Mapping):
        value = metadata.get(name)
    if value is None or value == "":
        return None
    if isinstance(value, dict | list):
        raise InvalidInputError(
            f"query {quote(qid)}: field {quote(name)} holds a {type(value).__name__}, not a class "
            "name; choose a field with a text value for --hard-class-from"
        )
    return str(value).strip() or None


def _identifier(text: str) -> str:
    return re.sub(r"[^a-z0-9_.]+", "_", text.lower()).strip("_.") or "imported"


def _read_text(path: Path, what: str) -> str:
    if not path.is_file():
        raise InvalidInputError(f"{path}: no such {what} file")
    try:
        refuse_too_large(path, MAX_SET_FILE_BYTES, "a set file", InvalidInputError)
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInputError(
            f"{path}: cannot read the {what} file ({shorten(str(exc))})"
        ) from None
