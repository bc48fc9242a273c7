"""The model judges' pieces: reading UMBRELA's score, the prompt's placeholders, identities,
a python judge's bad grades, and judge_all's budgets (with a python judge: no network)."""

from __future__ import annotations

import threading

import pytest

from retrieval_eval.labels.model_judges import (
    UMBRELA_PROMPT,
    Asked,
    PythonJudge,
    check_prompt,
    fingerprint,
    judge_all,
    read_score,
    render,
)


@pytest.mark.parametrize(
    ("answer", "grade"),
    [
        ("##final score: 2", 2),
        ("M: 2, T: 1\n##Final Score: **3**", 3),
        ("##final score: 1\n##final score: 0", 0),  # the last one given
    ],
)
def test_umbrela_scores_are_read(answer: str, grade: int) -> None:
    assert read_score(answer) == (grade, None)


@pytest.mark.parametrize("answer", ["relevant, I think", "##final score: 7", "score: 2", ""])
def test_an_unreadable_answer_is_never_guessed(answer: str) -> None:
    grade, reason = read_score(answer)
    assert grade is None and reason is not None and reason.startswith("unreadable answer")


def test_the_prompt_is_umbrelas_and_filled_by_plain_replacement() -> None:
    check_prompt(UMBRELA_PROMPT, "default")
    assert "##final score: score" in UMBRELA_PROMPT and "integer scale of 0 to 3" in UMBRELA_PROMPT
    filled = render(UMBRELA_PROMPT, "q {x}?", "text with {passage} braces")
    assert "Query: q {x}?\nPassage: text with {passage} braces\n" in filled
    with pytest.raises(ValueError, match=r"lacks \{passage\}"):
        check_prompt("Grade {query}", "judges.gpt.prompt")
    assert fingerprint(UMBRELA_PROMPT) != fingerprint(UMBRELA_PROMPT + " ")


def test_a_python_judge_grades_and_refuses_what_is_not_a_grade() -> None:
    answers = {"a": 2, "b": 5, "c": True, "d": "2"}

    def grade(question: str, text: str) -> object:
        if text == "boom":
            raise RuntimeError("model down")
        return answers[text]

    judge = PythonJudge("mine", grade, {"factory": "m:f", "options": {}, "version": "1"})
    assert judge.grade("q", "a").grade == 2
    for text in ("b", "c", "d"):
        answer = judge.grade("q", text)
        assert answer.grade is None and "not a grade 0-3" in (answer.reason or "")
    failed = judge.grade("q", "boom")
    assert failed.grade is None and not failed.answered and "RuntimeError" in (failed.reason or "")
    other = PythonJudge("mine", grade, {"factory": "m:f", "options": {}, "version": "2"})
    assert judge.identity != other.identity


def test_judge_all_runs_concurrently_and_stops_at_max_pairs() -> None:
    seen: list[str] = []
    lock = threading.Lock()

    def grade(question: str, text: str) -> int:
        with lock:
            seen.append(text)
        return 1

    judge = PythonJudge("mine", grade, {}, max_concurrency=3)
    pairs = [Asked(i, "q", f"t{i}") for i in range(10)]
    answers, tally = judge_all(judge, pairs, max_pairs=4)
    assert sorted(answers) == [0, 1, 2, 3] and len(seen) == 4
    assert tally.stopped == "--max-pairs 4 was reached" and tally.graded == 4
    answers, tally = judge_all(judge, pairs)
    assert len(answers) == 10 and tally.stopped is None


def test_the_rate_limit_spaces_requests_and_gives_up_past_the_deadline() -> None:
    import time

    from retrieval_eval.labels.model_judges import RateLimit

    limit = RateLimit(per_minute=600)  # one every 0.1 s
    start = time.monotonic()
    for _ in range(5):
        assert limit.wait(start + 10)
    assert time.monotonic() - start >= 0.39
    assert not limit.wait(time.monotonic())  # the next slot is after this deadline
    assert RateLimit(None).wait(0.0)  # no limit: never waits


def test_retry_after_reads_seconds_and_http_dates() -> None:
    from datetime import UTC, datetime, timedelta
    from email.utils import format_datetime

    import httpx

    from retrieval_eval.labels.model_judges import _retry_after

    def answer(value: str | None) -> httpx.Response:
        return httpx.Response(429, headers={"Retry-After": value} if value else {})

    assert _retry_after(answer("3")) == 3.0
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    assert 25 <= (_retry_after(answer(later)) or 0) <= 31
    assert _retry_after(answer("soon")) is None
    assert _retry_after(answer(None)) is None
