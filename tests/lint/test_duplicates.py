from __future__ import annotations

from lint.sets import golden, question
from retrieval_eval.config.models import LintOptions
from retrieval_eval.lint.duplicates import CHECK, TARGETS_CHECK, check_duplicates


def test_same_text_under_different_ids_is_one_duplicate_finding() -> None:
    found = check_duplicates(
        golden(
            question("a", "Can I get a refund?", "match", "r.md"),
            question("b", "can i  get a REFUND", "match", "s.md"),
            question("c", "Which plans include SSO?", "match", "t.md"),
        ),
        LintOptions(),
    )
    assert [(f.check, f.question_ids, f.details["similarity"]) for f in found] == [
        (CHECK, ["a", "b"], 1.0)
    ]


NEAR = (
    question("eu", "Can customers in the European Union get a refund on a monthly plan?"),
    question("eu2", "Can customers in the European Union get refunds on monthly plans?"),
)


def test_near_duplicates_at_the_threshold_are_reported_with_their_similarity() -> None:
    other = question("us", "How do I export my whole workspace as Markdown files?")
    found = check_duplicates(golden(*NEAR, other), LintOptions())
    assert [f.question_ids for f in found] == [["eu", "eu2"]]
    similarity = found[0].details["similarity"]
    assert 0.8 <= similarity < 1.0
    stricter = LintOptions(question_similarity=min(similarity + 0.01, 1.0))
    assert check_duplicates(golden(*NEAR), stricter) == []


def test_identical_target_lists_are_info_in_any_order_and_empty_lists_are_not_grouped() -> None:
    found = check_duplicates(
        golden(
            question("a", "How long is the reset link valid?", "match", "x.md", "y.md"),
            question("b", "I am locked out, how long do I wait?", "gap", "y.md", "x.md"),
            question("c", "Do you sell a fridge?", "gap"),
            question("d", "Do you sell a toaster oven?", "gap"),
        ),
        LintOptions(),
    )
    assert [(f.check, f.severity, f.question_ids, f.doc_ids) for f in found] == [
        (TARGETS_CHECK, "info", ["a", "b"], ["x.md", "y.md"])
    ]


def test_near_duplicates_of_near_duplicates_are_one_group() -> None:
    """A templated set is one finding, not a pair per two questions (1,500 questions: 725,350
    findings and 45 s before)."""
    templated = [
        question(f"t{i}", f"What is the refund policy for plan number {i}?") for i in range(60)
    ]
    other = question("us", "How do I export my whole workspace as Markdown files?")
    found = check_duplicates(golden(*templated, other), LintOptions())
    near = [f for f in found if f.check == CHECK]
    assert len(near) == 1
    (group,) = near
    assert group.question_ids == [f"t{i}" for i in range(60)]  # set order, "us" not in it
    details = group.details
    assert 0.8 <= details["lowest_similarity"] <= details["similarity"] < 1.0
    assert details["pairs"] == 59  # each question joined the group once
    assert group.message.startswith("60 near-duplicate questions (")
