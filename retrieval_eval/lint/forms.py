"""Form honesty: does a question's ``form`` say truthfully how much it shares with its targets?

Measure: the share of the question's content words (:func:`~retrieval_eval.lint.text.content_words`:
stemmed, stop words removed) that occur among the content words of a target's text, the
maximum over the question's targets whose text the corpus holds.

- A ``match`` question below ``lint.match_min_overlap`` (default 0.2) shares (almost) nothing
  with every target: it is a gap question labelled match, or its targets are wrong. At 0.2 a
  five-word question may share one word. On the demo set, match questions share 0.67-1.0; on
  SciFact (all claims taken as match) 20 of 300 fall below 0.2, claims worded far from their
  abstracts.
- A ``gap`` question above ``lint.gap_max_overlap`` (default 0.6) reuses most of its target's
  words: a lexical retriever finds it like a match question, and the gap slice flatters the
  retriever. "Most" is more than half; 0.6 lets a two-word question share one word but not a
  three-word question two. The demo's gap questions share at most 0.5.

Edge cases: a question without targets, or without content words (all stop words), or whose
targets are all missing from the corpus, is not judged (dead labels report missing targets).
"""

from __future__ import annotations

from collections.abc import Mapping

from retrieval_eval.config.models import LintOptions
from retrieval_eval.golden.models import GoldenQuestionSet, QuestionForm
from retrieval_eval.lint.models import Finding
from retrieval_eval.lint.text import content_words

CHECK = "form_honesty"


def overlap(question_words: set[str], target_words: set[str]) -> float:
    return len(question_words & target_words) / len(question_words) if question_words else 0.0


def check_forms(
    golden_set: GoldenQuestionSet, texts: Mapping[str, str], options: LintOptions
) -> list[Finding]:
    """One warning per question whose form its overlap contradicts."""
    words: dict[str, set[str]] = {}
    findings = []
    for question in golden_set.questions:
        targets = [d for d in question.targets() if d in texts]
        asked = content_words(question.question)
        if not targets or not asked:
            continue
        shares = {}
        for doc_id in targets:
            if doc_id not in words:
                words[doc_id] = content_words(texts[doc_id])
            shares[doc_id] = overlap(asked, words[doc_id])
        best_doc = max(shares, key=lambda d: shares[d])
        best = shares[best_doc]
        if question.form is QuestionForm.MATCH and best < options.match_min_overlap:
            message = (
                f"match question shares {best:.0%} of its content words with its closest target "
                f"(below match_min_overlap {options.match_min_overlap:.0%}): is it a gap question, "
                "or are its targets wrong?"
            )
        elif question.form is QuestionForm.GAP and best > options.gap_max_overlap:
            message = (
                f"gap question shares {best:.0%} of its content words with {best_doc} (above "
                f"gap_max_overlap {options.gap_max_overlap:.0%}): it reads like a match question"
            )
        else:
            continue
        shared = sorted(asked & words[best_doc])
        findings.append(
            Finding(
                check=CHECK,
                severity="warning",
                question_ids=[question.id],
                doc_ids=[best_doc],
                message=message,
                details={
                    "form": question.form.value,
                    "overlap": round(best, 4),
                    "content_words": sorted(asked),
                    "shared_words": shared,
                },
            )
        )
    return findings
