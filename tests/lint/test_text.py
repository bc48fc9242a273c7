from __future__ import annotations

from retrieval_eval.lint.text import content_words, normalised


def test_content_words_are_stemmed_and_drop_stop_words_and_single_letters() -> None:
    words = content_words("How do I get REFUNDS for the running plans? (a) x")
    assert words == {"refund", "run", "plan"}


def test_normalised_text_ignores_case_punctuation_and_spacing() -> None:
    assert (
        normalised("  Can I  get a refund?! ")
        == normalised("can i get a refund")
        == "can i get a refund"
    )


def test_a_question_of_stop_words_has_no_content_words() -> None:
    assert content_words("What is it?") == set()
