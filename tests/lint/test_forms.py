from __future__ import annotations

from lint.sets import document, golden, question
from retrieval_eval.config.models import LintOptions
from retrieval_eval.lint.forms import check_forms

TEXTS = {
    d.id: d.content
    for d in (
        document("billing/refunds.md", "Refunds: annual plans are refundable within 30 days."),
        document("security/sso.md", "SAML single sign-on is available on Enterprise plans."),
    )
}


def test_a_match_question_sharing_nothing_and_a_gap_question_sharing_everything_are_flagged() -> (
    None
):
    found = check_forms(
        golden(
            question("liar-match", "Can I turn on dark mode?", "match", "billing/refunds.md"),
            question("liar-gap", "Are annual plans refundable?", "gap", "billing/refunds.md"),
            question(
                "honest-match", "Which plans have SAML single sign-on?", "match", "security/sso.md"
            ),
            question(
                "honest-gap",
                "Can I get my money back for a yearly plan?",
                "gap",
                "billing/refunds.md",
            ),
        ),
        TEXTS,
        LintOptions(),
    )
    by_id = {f.question_ids[0]: f for f in found}
    assert set(by_id) == {"liar-match", "liar-gap"}
    assert by_id["liar-match"].details["overlap"] == 0.0
    assert by_id["liar-gap"].details["overlap"] == 1.0
    assert by_id["liar-gap"].details["shared_words"] == ["annual", "plan", "refund"]
    assert all(f.severity == "warning" for f in found)


def test_the_best_target_counts_and_thresholds_come_from_the_options() -> None:
    two_targets = question(
        "q",
        "Which plans have SAML single sign-on?",
        "match",
        "billing/refunds.md",
        "security/sso.md",
    )
    strict = LintOptions(match_min_overlap=1.0)
    # every content word is in the second target, none in the first: the best target decides
    assert check_forms(golden(two_targets), TEXTS, strict) == []
    other = question("r", "Which plans include SAML login?", "match", "security/sso.md")
    assert check_forms(golden(other), TEXTS, LintOptions()) == []  # 2 of 4 words: 50%
    assert [f.question_ids for f in check_forms(golden(other), TEXTS, strict)] == [["r"]]


def test_questions_that_cannot_be_judged_are_left_alone() -> None:
    found = check_forms(
        golden(
            question("no-targets", "Can I pay in bitcoin?", "match"),
            question("stop-words", "What is it?", "match", "billing/refunds.md"),
            question("dead-target", "Dark mode?", "match", "gone.md"),
        ),
        TEXTS,
        LintOptions(),
    )
    assert found == []
