"""Golden question sets: the labelled questions a team writes once against its own corpus.

The rules live in the field types, checked by pydantic-core: text is Unicode (no lone
surrogate), ids and the question are stripped and not empty, ids hold no control character, a
set identifier matches :data:`IDENTIFIER_PATTERN`. Python checks only what pydantic cannot (no
document id or question id twice; a form's spelling, :func:`_form`), and names what pydantic
found in the words users read (:func:`_named`). Validation collects every problem of a set so a
user fixes a file in one pass; see :func:`retrieval_eval.golden.loaders.validate_set_data` for
the collecting side.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from functools import cached_property
from typing import Annotated, Any, Self

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    FailFast,
    Field,
    StringConstraints,
    ValidationError,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    model_validator,
)
from pydantic_core import InitErrorDetails

from retrieval_eval.golden.forms import QuestionForm
from retrieval_eval.safety.limits import quote
from retrieval_eval.safety.surrogates import NUL_PROBLEM, PROBLEM, lone_surrogate

IDENTIFIER_PATTERN = r"^[a-z0-9_]+(\.[a-z0-9_]+)*$"
# ids are plain text: a control character (a NUL, an escape sequence, a line break) in an id is
# a broken export, and would garble every report and terminal that shows the id
_CONTROL = "\x00-\x1f\x7f"
_CONTROL_RE = re.compile(f"[{_CONTROL}]")

# Any string constraint makes pydantic-core read the value as UTF-8, which refuses a lone
# surrogate (``string_unicode``); ``min_length=0`` is that check alone. Stripping is Unicode's
# White_Space, so an id's edge U+001C-U+001F is a control character here, not a blank.
# A NUL character is refused in every text field: no store keeps one (PostgreSQL text cannot).
_NO_NUL = r"^[^\x00]*$"
Text = Annotated[str, StringConstraints(min_length=0, pattern=_NO_NUL)]
Stripped = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, pattern=_NO_NUL)]
PlainId = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, pattern=f"^[^{_CONTROL}]*$")
]
Identifier = Annotated[str, StringConstraints(pattern=IDENTIFIER_PATTERN)]

# how each field's problem reads: (its value, pydantic's error type) -> a message, or None to
# keep pydantic's own ("Input should be a valid string")
Namer = Callable[[Any, str], str | None]


def _control_character(text: str) -> str | None:
    """The first control character in ``text``, quoted, or None."""
    found = _CONTROL_RE.search(text)
    return quote(found.group()) if found else None


def _text_problem(value: Any, kind: str) -> str | None:
    if kind == "string_unicode":
        return PROBLEM.format(char=lone_surrogate(value))
    if kind == "string_pattern_mismatch":
        return NUL_PROBLEM
    return None


def _stripped_problem(value: Any, kind: str) -> str | None:
    if kind == "string_too_short":
        return "must not be empty or whitespace only"
    return _text_problem(value, kind)


def _id_problem(value: Any, kind: str) -> str | None:
    if kind == "string_pattern_mismatch":
        return f"contains a control character ({_control_character(value)}); ids are plain text"
    return _stripped_problem(value, kind)


_FORMS: dict[str, QuestionForm] = {form.value: form for form in QuestionForm}


def _form(value: Any) -> QuestionForm:
    """The form ``value`` names, compared stripped and lower-cased.

    Before pydantic's enum validation, which hands an unknown form to the Enum constructor,
    whose message repr()s the whole input (a 200 MB string, a list of them)."""
    if isinstance(value, str):
        form = _FORMS.get(value) or _FORMS.get(value.strip().lower())
        if form is not None:
            return form
    raise ValueError(f"unknown form {quote(value)}; use 'match' or 'gap'")


def _twice(ids: tuple[str, ...]) -> str | None:
    """The first id listed twice, or None (a set's size, at C speed, before any loop)."""
    if len(ids) < 2 or len(set(ids)) == len(ids):
        return None
    seen: set[str] = set()
    for item in ids:
        if item in seen:
            return item
        seen.add(item)
    return None


def _document_ids(value: Any, handler: ValidatorFunctionWrapHandler) -> tuple[str, ...]:
    """None is no target; an id listed twice (once stripped) is refused: pydantic has no
    unique-items constraint."""
    if value is None:
        return ()
    ids: tuple[str, ...] = handler(value)
    twice = _twice(ids)
    if twice is not None:
        raise ValueError(f"lists document id {quote(twice)} twice")
    return ids


# one problem per list, not one per item (a list of a million numbers is one mistake)
DocumentIds = Annotated[tuple[PlainId, ...], FailFast(), WrapValidator(_document_ids)]

# a label's grade is nDCG's gain: any non-negative integer, so an imported collection keeps its
# relevance codes (Cranfield's 1-4, a 0-5 scale) as trec_eval reads them; judgments files and
# the review queue grade on 0-3 (0 judged not relevant, 1 relevant, 2 highly, 3 perfectly)
Grade = Annotated[int, Field(strict=True, ge=0)]


def _grades(value: Any, handler: ValidatorFunctionWrapHandler) -> dict[str, int] | None:
    """None or an empty mapping is no grade; two keys that are one id once stripped are refused
    (a mapping cannot hold a key twice, but " a" and "a" are the same document)."""
    if value is None or (isinstance(value, Mapping) and not value):
        return None
    if isinstance(value, Mapping):
        twice = _twice(tuple(str(key).strip() for key in value))
        if twice is not None:
            raise ValueError(f"grades document id {quote(twice)} twice (ids are stripped)")
    grades: dict[str, int] = handler(value)
    return grades


# one problem per mapping (the namer reports the first), None when nothing is graded
Grades = Annotated[dict[PlainId, Grade] | None, WrapValidator(_grades)]


def _class_problem(value: Any, kind: str) -> str | None:
    if kind == "string_too_short":
        return "must not be an empty string (leave it out instead)"
    return _text_problem(value, kind)


def _document_ids_problem(value: Any, kind: str) -> str | None:
    """The first problem of a target list, in this order: an item that is no string, then an
    empty or repeated id (stripped), then a control character or a lone surrogate."""
    if isinstance(value, str):
        return "must be a list of document ids, not a single string"
    if kind == "tuple_type":
        return None  # pydantic says what it is instead
    items = list(value)
    others = [item for item in items if not isinstance(item, str)]  # None is one too
    if others:
        return f"must be a list of document id strings, not of {type(others[0]).__name__}"
    seen: set[str] = set()
    for doc_id in map(str.strip, items):
        if not doc_id:
            return "contains an empty document id"
        if doc_id in seen:
            return f"lists document id {quote(doc_id)} twice"
        seen.add(doc_id)
    for doc_id in map(str.strip, items):
        char = _control_character(doc_id)
        if char is not None:
            return (
                f"document id {quote(doc_id)} contains a control character ({char}); "
                "ids are plain text"
            )
        char = lone_surrogate(doc_id)
        if char is not None:
            return f"document id {quote(doc_id)} " + PROBLEM.format(char=char)
    return None


def _grades_problem(value: Any, kind: str) -> str | None:
    """The first problem of a grades mapping: not a mapping, then a bad document id (empty,
    twice, a control character), then a grade that is not a non-negative integer."""
    scale = "an integer >= 0 (0 not relevant, 1 relevant, 2 highly, 3 perfectly, or higher)"
    if not isinstance(value, Mapping):
        return (
            f"must be a mapping of document id to grade, e.g. {{doc-1: 2}}, not "
            f"{type(value).__name__}"
        )
    other = next((key for key in value if not isinstance(key, str)), None)
    if other is not None:
        return f"document id {quote(other)} must be text, not {type(other).__name__} (quote it)"
    problem = _document_ids_problem(list(value), kind)
    if problem is not None:
        return problem.replace("lists document id", "grades document id").replace(
            " twice", " twice (ids are stripped)"
        )
    for doc_id, grade in value.items():
        if type(grade) is not int or grade < 0:
            return f"the grade of document {quote(str(doc_id).strip())} must be {scale}, not {quote(grade)}"
    return None


def _named(
    title: str, exc: ValidationError, data: Any, namers: Mapping[str, Namer]
) -> ValidationError:
    """``exc`` with each named field's problem in the words users read, one per field, in place."""
    details: list[InitErrorDetails] = []
    done: set[str] = set()
    for err in exc.errors(include_url=False):
        loc = err["loc"]
        field = loc[0] if loc and isinstance(loc[0], str) else ""
        namer = namers.get(field)
        if namer is not None and isinstance(data, dict) and field in data:
            if field in done:
                continue
            done.add(field)
            message = namer(data[field], err["type"])
            if message is not None:
                error = ValueError(message)
                details.append(
                    {
                        "type": "value_error",
                        "loc": (field,),
                        "input": data[field],
                        "ctx": {"error": error},
                    }
                )
                continue
        detail: InitErrorDetails = {"type": err["type"], "loc": loc, "input": err["input"]}
        if "ctx" in err:
            detail["ctx"] = err["ctx"]
        details.append(detail)
    return ValidationError.from_exception_data(title, details)


_QUESTION_NAMERS: dict[str, Namer] = {
    "id": _id_problem,
    "question": _stripped_problem,
    "expected_document_ids": _document_ids_problem,
    "grades": _grades_problem,
    "hard_class": _class_problem,
    "answer_gist": _text_problem,
}


class GoldenQuestion(BaseModel):
    """One labelled question.

    ``expected_document_ids`` lists ALL documents that answer the question: any of them counts
    as a hit. An empty list means nothing indexed answers it, and the question is a hit only when
    the retriever returns nothing. ``grades`` (``{doc-id: grade >= 0}``) grades documents beside or
    instead of that list, which means grade 1 for each id it lists; an id in both takes its grade
    from ``grades``, and grade 0 is judged not relevant (a judged document, never a target).
    ``answer_gist`` is documentation and never scored. Ids are stripped: " a " is the document
    "a", and a second "a " a duplicate.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: PlainId
    question: Stripped
    form: Annotated[QuestionForm, BeforeValidator(_form)]
    expected_document_ids: DocumentIds = Field(default=())
    grades: Grades = None
    hard_class: Stripped | None = None
    answer_gist: Text | None = None

    @model_validator(mode="wrap")
    @classmethod
    def _checked(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> GoldenQuestion:
        try:
            return handler(data)
        except ValidationError as exc:
            raise _named(cls.__name__, exc, data, _QUESTION_NAMERS) from None

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy; with ``update`` the cached grades are dropped, since the labels may differ."""
        copy = super().model_copy(update=update, deep=deep)
        if update:
            copy.__dict__.pop("relevance", None)
        return copy

    @cached_property
    def relevance(self) -> dict[str, int]:
        """Every judged document's grade: 1 for each expected id, then ``grades`` over them."""
        listed = dict.fromkeys(self.expected_document_ids, 1)
        return {**listed, **self.grades} if self.grades else listed

    @property
    def judged_ids(self) -> tuple[str, ...]:
        """The documents a person judged, targets or not (grade 0), expected ids first."""
        return tuple(self.relevance)

    def targets(self, level: int = 1) -> tuple[str, ...]:
        """The documents that answer the question at relevance ``level``: grade >= level.

        A question with none at that level is a no-result question at that level in the hit
        rates: it is scored as an empty ``expected_document_ids`` is (trec_eval and ranx score a
        query with no relevant document 0 whenever anything is returned); being judged, it
        counts 0 in recall and MRR, as in trec_eval."""
        if not self.grades:
            return self.expected_document_ids if level <= 1 else ()
        return tuple(doc_id for doc_id, grade in self.relevance.items() if grade >= level)

    @property
    def is_graded(self) -> bool:
        """True when the question gives grades (beyond the binary expected list)."""
        return self.grades is not None

    @property
    def is_no_result(self) -> bool:
        """True when nothing indexed answers the question (no target at relevance level 1)."""
        return not self.targets()


def _identifier_problem(value: Any, kind: str) -> str | None:
    if kind == "string_pattern_mismatch":
        return (
            f"{quote(value)} is not a valid identifier: use lowercase letters, digits and "
            "underscores, in dot-separated parts (e.g. 'handbook.demo')"
        )
    return _text_problem(value, kind)


class ChangelogEntry(BaseModel):
    """One version's changes, as ``sets promote`` writes them: what was added, removed, regraded
    and judged not relevant (each ``question id: document id``), by whom, when. Documentation:
    never scored, not in the labels fingerprint."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: Annotated[int, Field(ge=1)]
    date: Text
    raters: tuple[Text, ...] = ()
    added: tuple[Text, ...] = ()
    removed: tuple[Text, ...] = ()
    regraded: tuple[Text, ...] = ()
    not_relevant: tuple[Text, ...] = ()  # unlabelled documents judged not relevant (grade 0)
    questions_added: tuple[Text, ...] = ()
    note: Text | None = None


_SET_NAMERS: dict[str, Namer] = {
    "identifier": _identifier_problem,
    "name": _text_problem,
    "description": _text_problem,
    "corpus_revision": _text_problem,
}


class GoldenQuestionSet(BaseModel):
    """A named, versioned collection of golden questions with unique ids."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    identifier: Identifier
    name: Text = ""
    description: Text = ""
    corpus_revision: Text | None = None
    # the set file's version, counted by ``sets promote`` (None: never promoted); the labels
    # fingerprint, not this number, decides which runs compare
    version: Annotated[int, Field(ge=1)] | None = None
    changelog: tuple[ChangelogEntry, ...] = ()
    questions: tuple[GoldenQuestion, ...]

    @model_validator(mode="wrap")
    @classmethod
    def _checked(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> GoldenQuestionSet:
        try:
            golden_set = handler(data)
        except ValidationError as exc:
            raise _named(cls.__name__, exc, data, _SET_NAMERS) from None
        if not golden_set.questions:
            raise ValueError("questions: the set has no questions; add at least one")
        twice = _twice(tuple(question.id for question in golden_set.questions))
        if twice is not None:
            raise ValueError(f"questions: duplicate question id {quote(twice)}")
        return golden_set

    @cached_property
    def fingerprint(self) -> str:
        """The labels fingerprint, computed once per set: the set is frozen, so it cannot go stale."""
        from retrieval_eval.golden.fingerprint import labels_fingerprint

        return labels_fingerprint(self)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy; with ``update`` the cached fingerprint is dropped, since the labels may differ."""
        copy = super().model_copy(update=update, deep=deep)
        if update:
            copy.__dict__.pop("fingerprint", None)
        return copy

    def __len__(self) -> int:
        return len(self.questions)
