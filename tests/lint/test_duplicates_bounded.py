"""Near-duplicate search on a template-like set is bounded: 3,000 questions of 8 words from a
24-word vocabulary share LSH buckets almost all (1.5 million exact pairs at 4,000 before); the
measured pairs stay within the per-question bound, and the lint output says the search was capped.
"""

from __future__ import annotations

import random

from lint.sets import golden, question
from retrieval_eval.config.models import LintOptions
from retrieval_eval.lint.duplicates import (
    CAPPED_CHECK,
    CHECK,
    PAIRS_PER_QUESTION,
    check_duplicates,
)


def test_a_template_like_set_is_searched_within_the_bounds_and_the_cap_is_said() -> None:
    rng = random.Random(7)
    vocab = [f"word{i:02d}" for i in range(24)]
    questions = [question(f"q{i}", " ".join(rng.choices(vocab, k=8))) for i in range(3000)]
    found = check_duplicates(golden(*questions), LintOptions())
    (capped,) = [f for f in found if f.check == CAPPED_CHECK]
    assert capped.severity == "info" and "was capped" in capped.message
    assert capped.details["measured_pairs"] <= PAIRS_PER_QUESTION * 3000 // 2
    assert capped.details["skipped_pairs"] > 0
    assert all(f.check in (CHECK, CAPPED_CHECK, "identical_targets") for f in found)


def test_a_small_set_is_searched_whole_and_says_nothing_of_caps() -> None:
    questions = [
        question(f"t{i}", f"What is the refund policy for plan number {i}?") for i in range(8)
    ]
    found = check_duplicates(golden(*questions), LintOptions())
    assert not [f for f in found if f.check == CAPPED_CHECK]
    assert [f.check for f in found] == [CHECK]
