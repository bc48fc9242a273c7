"""Label completeness: corpus documents nearly identical to a target but not labelled with it.

A retriever that returns such a document is judged a miss, although the document most likely
answers the question too. Each document's word 3-shingles (:class:`~.minhash.ShingleSets`) get a
MinHash signature and go into an LSH index (:mod:`.minhash`); each distinct target looks up its
candidates, whose exact Jaccard similarity must reach ``lint.document_similarity`` (default
0.8: the pages share four fifths of their word triples, as a copied page with a changed
paragraph does; two different pages of one template are usually far below). A question gets one
warning listing its candidate labels, each with the target it resembles and the similarity.

Nearly identical pages may still differ in the one fact the question asks about (a regional
variant of a policy): a candidate is for review, not a label to add blindly.

Cost: signing is linear in the corpus; lookups are one per distinct target; no pair of
documents is compared unless LSH puts them in one bucket (sub-quadratic, see
``benchmarks/lint.py``). Targets missing from the corpus are skipped (dead labels reports them).
"""

from __future__ import annotations

from collections.abc import Sequence

from retrieval_eval.config import LintOptions
from retrieval_eval.golden.models import GoldenQuestionSet
from retrieval_eval.lint.minhash import LshIndex, ShingleSets, jaccard
from retrieval_eval.lint.models import Finding
from retrieval_eval.retrievers.corpus import Document

CHECK = "label_completeness"


def near_duplicates(
    documents: Sequence[Document], targets: set[str], threshold: float
) -> dict[str, dict[str, float]]:
    """For each target in the corpus: the other documents at least ``threshold`` similar."""
    shingles = ShingleSets.from_texts([doc.content for doc in documents], 3)
    index = LshIndex(shingles)
    found: dict[str, dict[str, float]] = {}
    for i, doc in enumerate(documents):
        if doc.id not in targets:
            continue
        similar = {}
        for j in index.query(i):
            if documents[j].id != doc.id:
                similarity = jaccard(shingles.shingles(i), shingles.shingles(j))
                if similarity >= threshold:
                    similar[documents[j].id] = round(similarity, 4)
        found[doc.id] = similar
    return found


def check_completeness(
    golden_set: GoldenQuestionSet, documents: Sequence[Document], options: LintOptions
) -> list[Finding]:
    targets = {d for q in golden_set.questions for d in q.expected_document_ids}
    similar = near_duplicates(documents, targets, options.document_similarity)
    findings = []
    for question in golden_set.questions:
        labelled = set(question.expected_document_ids)
        candidates: dict[str, dict[str, object]] = {}
        for target in question.expected_document_ids:
            for doc_id, similarity in similar.get(target, {}).items():
                if doc_id in labelled:
                    continue
                best = candidates.get(doc_id)
                if best is None or float(best["jaccard"]) < similarity:  # type: ignore[arg-type]
                    candidates[doc_id] = {"similar_to": target, "jaccard": similarity}
        if candidates:
            listed = ", ".join(
                f"{d} ({c['jaccard']:.0%} like {c['similar_to']})"
                for d, c in sorted(candidates.items())
            )
            findings.append(
                Finding(
                    check=CHECK,
                    severity="warning",
                    question_ids=[question.id],
                    doc_ids=sorted(candidates),
                    message=f"candidate labels, near-duplicates of a target: {listed}",
                    details={"candidates": dict(sorted(candidates.items()))},
                )
            )
    return findings
