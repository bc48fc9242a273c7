"""The langchain adapter over langchain-core's in-memory vector store and fake embeddings."""

from __future__ import annotations

from typing import Any

import pytest

from retrieval_eval.errors import ConfigError
from retrieval_eval.evaluation.scoring import evaluate
from retrieval_eval.golden.models import GoldenQuestion, GoldenQuestionSet
from retrieval_eval.retrievers.options import BuildContext
from retrieval_eval.retrievers.registry import RetrieverRegistry

pytest.importorskip("langchain_core")

from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.vectorstores import InMemoryVectorStore

TEXTS = {
    "refunds": "Refunds are issued within 14 days of a cancelled order.",
    "passwords": "Reset your password from the account settings page.",
    "export": "Notes can be exported to Markdown or PDF.",
    "sso": "Single sign-on works with any SAML identity provider.",
}


def make_store(size: int = 64) -> InMemoryVectorStore:
    """A vector store whose documents carry their id in metadata['source_id'] (one lacks it)."""
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=size))
    store.add_documents(
        [
            Document(page_content=text, metadata={"source_id": f"{name}.md"}, id=f"uuid-{name}")
            for name, text in TEXTS.items()
            if name != "sso"
        ]
        + [Document(page_content=TEXTS["sso"], id="sso.md")]
    )
    return store


def make_retriever(k: int = 4, size: int = 64) -> Any:
    return make_store(size).as_retriever(search_kwargs={"k": k})


STORE = make_store()
ME = __name__


def build(**options: Any) -> Any:
    spec = {"type": "langchain", "factory": f"{ME}:make_retriever", **options}
    return RetrieverRegistry({"rag": spec}, source="cfg.yaml").build("rag")


def test_ids_from_metadata_key_then_document_id() -> None:
    retriever = build(id_key="source_id")
    # deterministic fake embeddings: identical text, identical vector, cosine 1
    assert retriever.retrieve(TEXTS["export"], 4)[0] == "export.md"
    ranked = retriever.retrieve(TEXTS["sso"], 4)
    assert ranked[0] == "sso.md"  # no source_id: Document.id is used
    assert sorted(ranked) == ["export.md", "passwords.md", "refunds.md", "sso.md"]


def test_default_id_key_falls_back_to_document_id() -> None:
    assert build().retrieve(TEXTS["refunds"], 1) == ["uuid-refunds"]


def test_evaluates_a_golden_set_with_factory_kwargs_and_limit_argument() -> None:
    golden = GoldenQuestionSet(
        identifier="lc.test",
        questions=[
            GoldenQuestion(
                id=name, question=text, form="match", expected_document_ids=[f"{name}.md"]
            )
            for name, text in TEXTS.items()
        ],
    )
    retriever = build(id_key="source_id", kwargs={"k": 1, "size": 32}, limit_argument="k")
    assert len(retriever.retrieve(TEXTS["export"], 3)) == 3  # k=limit wins over k=1
    result = evaluate(golden, retriever)
    assert result.top1_hits == 4 and result.error_count == 0


def test_a_vector_store_object_is_used_through_as_retriever() -> None:
    retriever = build(factory=f"{ME}:STORE", id_key="source_id")
    assert retriever.retrieve(TEXTS["passwords"], 4)[0] == "passwords.md"


def test_document_without_id_is_an_error_for_that_question() -> None:
    retriever = build(id_key="source_id")
    retriever.runnable = type(
        "Fake", (), {"invoke": lambda self, q: [Document(page_content="x", metadata={"a": 1})]}
    )()
    with pytest.raises(ValueError, match=r"position 0 has no metadata\['source_id'\] .* keys: a"):
        retriever.retrieve("q", 3)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"factory": "no_such_module_xyz:thing"}, r"retrievers.rag.factory: cannot import"),
        ({"factory": f"{ME}:TEXTS"}, r"retrievers.rag.factory: dict has no invoke"),
        ({"factory": f"{ME}:STORE", "kwargs": {"k": 1}}, r"'kwargs' given"),
        ({"kwargs": {"colour": 1}}, r"calling the factory failed"),
        ({"id_key": ""}, r"retrievers.rag.id_key"),
    ],
)
def test_configuration_errors_name_the_option(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        build(**options)


def test_built_directly_from_options() -> None:
    from retrieval_eval.retrievers.langchain import LangchainRetriever

    retriever = LangchainRetriever.from_options(
        "rag", {"factory": f"{ME}:make_retriever"}, BuildContext()
    )
    assert retriever.max_concurrency == 1 and len(retriever.retrieve("anything", 12)) == 4
