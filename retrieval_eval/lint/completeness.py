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

Cost: signing is linear in the corpus (and cached by its content when it comes from a path,
:mod:`.signature_cache`); lookups are one per distinct target; no pair of documents is compared
unless LSH puts them in one bucket (sub-quadratic, see ``benchmarks/lint.py``). Targets missing from the corpus are skipped (dead labels reports them).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from retrieval_eval.config.models import LintOptions
from retrieval_eval.golden.models import GoldenQuestionSet
from retrieval_eval.labels.judged import judged_pairs
from retrieval_eval.lint.minhash import LshIndex, ShingleSets, jaccard
from retrieval_eval.lint.models import Finding
from retrieval_eval.lint.signature_cache import SHINGLE_WORDS, corpus_signatures
from retrieval_eval.retrievers.corpus import Document

if TYPE_CHECKING:
    from retrieval_eval.labels.judgments import Judgment

CHECK = "label_completeness"


def near_duplicates(
    documents: Sequence[Document],
    targets: set[str],
    threshold: float,
    corpus: Path | None = None,
) -> dict[str, dict[str, float]]:
    """For each target in the corpus: the other documents at least ``threshold`` similar.

    ``corpus``: the path the documents were read from, so their signatures can be cached
    (:mod:`.signature_cache`). Only the targets and their candidates are shingled again, for
    the exact similarity.
    """
    index = LshIndex(*corpus_signatures(documents, corpus))
    looked_up = {i: index.query(i) for i, doc in enumerate(documents) if doc.id in targets}
    needed = sorted(set(looked_up).union(*looked_up.values()))
    row = {k: position for position, k in enumerate(needed)}
    shingles = ShingleSets.from_texts([documents[k].content for k in needed], SHINGLE_WORDS)
    found: dict[str, dict[str, float]] = {}
    for i, candidates in looked_up.items():
        similar = {}
        for j in candidates:
            if documents[j].id != documents[i].id:
                similarity = jaccard(shingles.shingles(row[i]), shingles.shingles(row[j]))
                if similarity >= threshold:
                    similar[documents[j].id] = round(similarity, 4)
        found[documents[i].id] = similar
    return found


def check_completeness(
    golden_set: GoldenQuestionSet,
    documents: Sequence[Document],
    options: LintOptions,
    corpus: Path | None = None,
    judgments: Sequence[Judgment] = (),
) -> list[Finding]:
    """A warning per question with candidate labels: near-duplicates of its targets that are
    not judged (:mod:`retrieval_eval.labels.judged`: the set or ``judgments`` grade them)."""
    targets = {d for q in golden_set.questions for d in q.targets()}
    similar = near_duplicates(documents, targets, options.document_similarity, corpus)
    judged = judged_pairs(questions=golden_set.questions, rows=judgments)
    findings = []
    for question in golden_set.questions:
        candidates: dict[str, dict[str, object]] = {}
        for target in question.targets():
            for doc_id, similarity in similar.get(target, {}).items():
                if (question.id, doc_id) in judged:
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


def pool_candidates(findings: Iterable[Finding]) -> list[tuple[str, str, str]]:
    """(question id, document id, source) of lint's completeness findings: the source is the
    check's name with the target the document is like (``label_completeness: 82% like x.md``)."""
    found: list[tuple[str, str, str]] = []
    for finding in findings:
        if finding.check != CHECK:
            continue
        for doc, why in finding.details.get("candidates", {}).items():
            like = f"{float(why['jaccard']):.0%} like {why['similar_to']}"
            found.extend((qid, doc, f"{CHECK}: {like}") for qid in finding.question_ids)
    return found
