"""Golden question sets: the labelled questions a team writes once against its own corpus.

Validation collects every problem of a set so a user fixes a file in one pass; see
:func:`retrieval_eval.golden.loaders.validate_set_data` for the collecting side.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cached_property
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from retrieval_eval.golden.forms import QuestionForm
from retrieval_eval.safety.limits import quote
from retrieval_eval.safety.surrogates import PROBLEM, lone_surrogate

IDENTIFIER_PATTERN = r"^[a-z0-9_]+(\.[a-z0-9_]+)*$"
_IDENTIFIER_RE = re.compile(IDENTIFIER_PATTERN)
# ids are plain text: a control character (a NUL, an escape sequence, a line break) in an id is
# a broken export, and would garble every report and terminal that shows the id
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")


def _control_character(text: str) -> str | None:
    """The first control character in ``text``, quoted, or None."""
    found = _CONTROL_RE.search(text)
    return quote(found.group()) if found else None


_FORMS: dict[str, QuestionForm] = {form.value: form for form in QuestionForm}


def _text(value: str) -> str:
    """``value`` unless it holds a lone surrogate (``retrieval_eval.safety.surrogates``)."""
    char = lone_surrogate(value)
    if char is not None:
        raise ValueError(PROBLEM.format(char=char))
    return value


def _stripped(value: str) -> str:
    text = _text(value).strip()
    if not text:
        raise ValueError("must not be empty or whitespace only")
    return text


class GoldenQuestion(BaseModel):
    """One labelled question.

    ``expected_document_ids`` lists ALL documents that answer the question: any of them counts
    as a hit. An empty list means nothing indexed answers it, and the question is a hit only when
    the retriever returns nothing. ``answer_gist`` is documentation and never scored.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    question: str
    form: QuestionForm
    expected_document_ids: tuple[str, ...] = Field(default=())
    hard_class: str | None = None
    answer_gist: str | None = None

    @field_validator("question")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        return _stripped(value)

    @field_validator("id")
    @classmethod
    def _plain_id(cls, value: str) -> str:
        text = _stripped(value)
        if not text.isprintable():  # at C speed; then whether it is a control character
            char = _control_character(text)
            if char is not None:
                raise ValueError(f"contains a control character ({char}); ids are plain text")
        return text

    @field_validator("form", mode="before")
    @classmethod
    def _known_form(cls, value: Any) -> QuestionForm:
        # before pydantic's enum validation, which hands an unknown form to the Enum
        # constructor, whose message repr()s the whole input (a 200 MB string, an alias bomb)
        if isinstance(value, str):
            form = _FORMS.get(value) or _FORMS.get(value.strip().lower())
            if form is not None:
                return form
        raise ValueError(f"unknown form {quote(value)}; use 'match' or 'gap'")

    @field_validator("expected_document_ids", mode="before")
    @classmethod
    def _clean_ids(cls, value: Any) -> Any:
        """Stripped like question ids (" a " is the document "a", and a second "a " a
        duplicate), no empty one, no duplicate, no control character; one problem per list,
        not one per item (a list of a million numbers is one mistake)."""
        if value is None:
            return ()
        if isinstance(value, str):
            raise ValueError("must be a list of document ids, not a single string")
        if not isinstance(value, (list, tuple)):
            return value  # pydantic says what it is instead
        # at C speed, a Python loop only to name what is wrong
        try:
            joined = "".join(value)
        except TypeError:
            other = next(item for item in value if not isinstance(item, str))
            raise ValueError(
                f"must be a list of document id strings, not of {type(other).__name__}"
            ) from None
        stripped = tuple(map(str.strip, value))
        if "" in stripped or len(set(stripped)) < len(stripped):
            seen: set[str] = set()
            for doc_id in stripped:
                if not doc_id:
                    raise ValueError("contains an empty document id")
                if doc_id in seen:
                    raise ValueError(f"lists document id {quote(doc_id)} twice")
                seen.add(doc_id)
        if not joined.isprintable():  # a control character, or only a tab or a no-break space
            for doc_id in stripped:
                char = _control_character(doc_id)
                if char is not None:
                    raise ValueError(
                        f"document id {quote(doc_id)} contains a control character ({char}); "
                        "ids are plain text"
                    )
                char = lone_surrogate(doc_id)
                if char is not None:
                    raise ValueError(f"document id {quote(doc_id)} " + PROBLEM.format(char=char))
        return stripped

    @field_validator("hard_class")
    @classmethod
    def _class_not_blank(cls, value: str | None) -> str | None:
        if value is not None and not _text(value).strip():
            raise ValueError("must not be an empty string (leave it out instead)")
        return value.strip() if value is not None else None

    @field_validator("answer_gist")
    @classmethod
    def _gist_is_text(cls, value: str | None) -> str | None:
        return value if value is None else _text(value)

    @property
    def is_no_result(self) -> bool:
        """True when nothing indexed answers the question (no expected documents)."""
        return not self.expected_document_ids


class GoldenQuestionSet(BaseModel):
    """A named, versioned collection of golden questions with unique ids."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    identifier: str
    name: str = ""
    description: str = ""
    corpus_revision: str | None = None
    questions: tuple[GoldenQuestion, ...]

    @field_validator("name", "description", "corpus_revision")
    @classmethod
    def _is_text(cls, value: str | None) -> str | None:
        return value if value is None else _text(value)

    @field_validator("identifier")
    @classmethod
    def _identifier_shape(cls, value: str) -> str:
        if not _IDENTIFIER_RE.match(value):
            raise ValueError(
                f"{quote(value)} is not a valid identifier: use lowercase letters, digits and "
                "underscores, in dot-separated parts (e.g. 'handbook.demo')"
            )
        return value

    @model_validator(mode="after")
    def _questions_unique(self) -> GoldenQuestionSet:
        if not self.questions:
            raise ValueError("questions: the set has no questions; add at least one")
        seen: set[str] = set()
        for question in self.questions:
            if question.id in seen:
                raise ValueError(f"questions: duplicate question id {quote(question.id)}")
            seen.add(question.id)
        return self

    @cached_property
    def fingerprint(self) -> str:
        """The labels fingerprint, computed once per set: the set is frozen, so it cannot go stale.

        Planning 1,000 batches of a 5,000-question set used to recompute it per batch (~23 s).
        """
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
