"""Small sets and corpora the lint tests build (``from lint.sets import ...``)."""

from __future__ import annotations

from retrieval_eval.golden.models import GoldenQuestion, GoldenQuestionSet
from retrieval_eval.retrievers.corpus import Document


def question(
    qid: str, text: str, form: str = "match", *targets: str, **extra: str
) -> GoldenQuestion:
    return GoldenQuestion(
        id=qid,
        question=text,
        form=form,
        expected_document_ids=targets,
        **extra,  # type: ignore[arg-type]
    )


def golden(*questions: GoldenQuestion, identifier: str = "lint.test") -> GoldenQuestionSet:
    return GoldenQuestionSet(identifier=identifier, questions=questions)


def document(doc_id: str, text: str) -> Document:
    return Document(doc_id, "", text)
