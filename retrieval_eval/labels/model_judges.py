"""Model judges: a (question, document text) pair graded 0-3 by a model, never guessed.

- The default prompt is UMBRELA's (Upadhyay et al. 2024, "UMBRELA: UMbrela is the (Open-Source
  Reproduction of the) Bing RELevance Assessor", arXiv:2406.06519; github.com/castorini/umbrela,
  ``prompts/qrel_zeroshot_bing.txt``): the project's 0-3 scale, the answer read as
  ``##final score: N``. A custom prompt holds ``{query}`` and ``{passage}``; it is filled by plain
  replacement (a document's braces are text). Its fingerprint is part of the judge's identity.
- A judge's identity is a digest of everything that decides its grades (type, model, endpoint,
  prompt fingerprint, sampling settings; a python judge's factory, options and version): answers
  are cached and calibrations stored under it, so a changed model or prompt starts afresh.
- :class:`OpenAIJudge`: any OpenAI-compatible ``/chat/completions`` endpoint through httpx, with
  a requests-per-minute limit, retries with backoff on 429, 5xx and transport errors (a
  ``Retry-After`` wins) within the pair's deadline, tokens and cost from the answer's ``usage``.
  An answer without a readable score is unjudged with the reason; a 401/403/404 stops the run
  (:class:`JudgeUnavailableError`): no later pair would fare better.
- :class:`PythonJudge`: the team's ``grade(question, document_text) -> int``.
- :func:`judge_all`: many pairs at ``max_concurrency``, stopping cleanly at ``max_pairs`` or once
  the running cost reaches ``max_cost_usd`` (answers in flight are kept).

Keys never leave this module in a message: errors are redacted
(:func:`retrieval_eval.safety.redaction.redact`, the key registered by whoever built the judge).
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any, Protocol

from retrieval_eval.errors import RetrievalEvalError
from retrieval_eval.safety.redaction import quote_body, redact

# UMBRELA's zero-shot Bing prompt as published (castorini/umbrela, Apache-2.0), trailing spaces trimmed
UMBRELA_PROMPT = """\
Given a query and a passage, you must provide a score on an integer scale of 0 to 3 with the following meanings:
0 = represent that the passage has nothing to do with the query,
1 = represents that the passage seems related to the query but does not answer it,
2 = represents that the passage has some answer for the query, but the answer may be a bit unclear, or hidden amongst extraneous information and
3 = represents that the passage is dedicated to the query and contains the exact answer.

Important Instruction: Assign category 1 if the passage is somewhat related to the topic but not completely, category 2 if passage presents something very important related to the entire topic but also has some extra information and category 3 if the passage only and entirely refers to the topic. If none of the above satisfies give it category 0.

Query: {query}
Passage: {passage}

Split this problem into steps:
Consider the underlying intent of the search.
Measure how well the content matches a likely intent of the query (M).
Measure how trustworthy the passage is (T).
Consider the aspects above and the relative importance of each, and decide on a final score (O). Final score must be an integer value only.
Do not provide any code in result. Provide each score in the format of: ##final score: score without providing any reasoning."""

PLACEHOLDERS = ("{query}", "{passage}")
_SCORE = re.compile(r"##\s*final\s+score\s*:\s*\**\s*([0-9]+)", re.IGNORECASE)
RETRIED = frozenset({408, 409, 425, 429, *range(500, 600)})
FATAL = frozenset({401, 403, 404})


class JudgeUnavailableError(RetrievalEvalError):
    """The judge's endpoint refuses every request (a bad key, an unknown model): exit code 3."""

    exit_code = 3


def fingerprint(text: str) -> str:
    """A prompt's (or any text's) fingerprint: the first 16 hex digits of its SHA-256."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def identity_of(settings: dict[str, Any]) -> str:
    """A judge's identity: the digest of what decides its grades (canonical JSON)."""
    canonical = json.dumps(settings, sort_keys=True, separators=(",", ":"), default=str)
    return fingerprint(canonical)


def cache_key(identity: str, question: str, document_text: str) -> str:
    """The cache's key of one pair for one judge: SHA-256 of identity, question and text."""
    joined = "\x00".join((identity, question, document_text))
    return hashlib.sha256(joined.encode("utf-8")).hexdigest()


def check_prompt(text: str, where: str) -> None:
    """A prompt must hold ``{query}`` and ``{passage}``; else a ValueError naming the missing."""
    missing = [p for p in PLACEHOLDERS if p not in text]
    if missing:
        raise ValueError(
            f"{where}: the prompt lacks {' and '.join(missing)}: write them where the question "
            "and the document's text go"
        )


def render(prompt: str, question: str, document_text: str) -> str:
    """The prompt with the question and the text in place (plain replacement, braces kept)."""
    return prompt.replace("{query}", question).replace("{passage}", document_text)


def read_score(answer: str) -> tuple[int | None, str | None]:
    """(grade, None) from UMBRELA's ``##final score: N`` (the last one given), else (None, why)."""
    found = _SCORE.findall(answer)
    if not found:
        return None, f"unreadable answer (no '##final score: N'): {quote_body(answer, 120)!s}"
    value = int(found[-1])
    if not 0 <= value <= 3:
        return None, f"unreadable answer: final score {value} is not a grade 0-3"
    return value, None


@dataclass(frozen=True, slots=True)
class Answer:
    """A judge's verdict on one pair: a grade, or why there is none."""

    grade: int | None
    reason: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    answered: bool = True  # the judge answered (cacheable); False: no answer (timeouts, errors)
    cached: bool = False


class Judge(Protocol):
    """What :func:`judge_all` needs of a judge."""

    @property
    def name(self) -> str: ...
    @property
    def identity(self) -> str: ...
    @property
    def model(self) -> str | None: ...
    @property
    def prompt_fingerprint(self) -> str | None: ...
    @property
    def max_concurrency(self) -> int: ...

    def grade(self, question: str, document_text: str) -> Answer: ...

    def close(self) -> None: ...


class RateLimit:
    """At most ``per_minute`` starts a minute, spaced evenly; shared by the judge's threads."""

    def __init__(self, per_minute: float | None) -> None:
        self.interval = 60.0 / per_minute if per_minute else 0.0
        self._next = 0.0
        self._lock = threading.Lock()

    def wait(self, deadline: float) -> bool:
        """Wait for the next slot; False (no slot taken) when it comes after ``deadline``."""
        if not self.interval:
            return True
        with self._lock:
            now = time.monotonic()
            start = max(now, self._next)
            if start > deadline:
                return False
            self._next = start + self.interval
        time.sleep(max(0.0, start - time.monotonic()))
        return True


@dataclass
class OpenAIJudge:
    """A judge behind an OpenAI-compatible chat-completions endpoint (see the module docstring)."""

    name: str
    model: str
    base_url: str
    api_key: str | None = None
    prompt: str = UMBRELA_PROMPT
    temperature: float = 0.0
    max_tokens: int = 64
    max_concurrency: int = 4
    requests_per_minute: float | None = None
    input_price_per_1k: float = 0.0
    output_price_per_1k: float = 0.0
    timeout_s: float = 60.0
    deadline_s: float = 300.0
    backoff_s: float = 1.0
    _client: Any = field(default=None, repr=False)
    _limit: RateLimit = field(init=False, repr=False)

    def __post_init__(self) -> None:
        import httpx

        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        self._client = httpx.Client(
            base_url=self.base_url,
            headers=headers,
            timeout=self.timeout_s,
            limits=httpx.Limits(max_connections=self.max_concurrency),
            follow_redirects=False,
        )
        self._limit = RateLimit(self.requests_per_minute)

    @property
    def prompt_fingerprint(self) -> str:
        return fingerprint(self.prompt)

    @property
    def identity(self) -> str:
        return identity_of(
            {
                "type": "openai",
                "model": self.model,
                "base_url": self.base_url,
                "prompt": self.prompt_fingerprint,
                "temperature": self.temperature,
                "max_tokens": self.max_tokens,
            }
        )

    def close(self) -> None:
        self._client.close()

    def grade(self, question: str, document_text: str) -> Answer:
        import httpx

        body = {
            "model": self.model,
            "messages": [{"role": "user", "content": render(self.prompt, question, document_text)}],
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }
        deadline = time.monotonic() + self.deadline_s
        attempt = 0
        problem = "no attempt"
        while True:
            if not self._limit.wait(deadline):
                return self._late(problem)
            try:
                response = self._client.post("/chat/completions", json=body)
            except httpx.HTTPError as exc:
                problem = redact(f"{type(exc).__name__}: {exc}")[:200]
                delay = self.backoff_s * 2**attempt
            else:
                if response.status_code == 200:
                    return self._read(response)
                snippet = quote_body(response.text, 120)
                problem = f"HTTP {response.status_code}: {snippet}"
                if response.status_code in FATAL:
                    raise JudgeUnavailableError(
                        f"judge {self.name}: {self.base_url}/chat/completions answered {problem}: "
                        "check the key, the model name and base_url"
                    )
                if response.status_code not in RETRIED:
                    return Answer(None, problem, answered=False)
                delay = _retry_after(response) or self.backoff_s * 2**attempt
            attempt += 1
            if time.monotonic() + delay > deadline:
                return self._late(problem)
            time.sleep(delay)

    def _late(self, problem: str) -> Answer:
        return Answer(
            None,
            f"no answer within the deadline of {self.deadline_s:g} s ({problem})",
            answered=False,
        )

    def _read(self, response: Any) -> Answer:
        try:
            payload = response.json()
            content = payload["choices"][0]["message"]["content"]
            usage = payload.get("usage") or {}
            tokens_in = int(usage.get("prompt_tokens") or 0)
            tokens_out = int(usage.get("completion_tokens") or 0)
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            return Answer(
                None,
                f"unreadable answer (not a chat completion): {quote_body(response.text, 120)}",
                answered=False,
            )
        cost = (
            tokens_in / 1000 * self.input_price_per_1k
            + tokens_out / 1000 * self.output_price_per_1k
        )
        grade, reason = read_score(content if isinstance(content, str) else "")
        return Answer(grade, reason, tokens_in, tokens_out, cost)


def _retry_after(response: Any) -> float | None:
    """A ``Retry-After`` header's delay in seconds (a number or an HTTP date), if readable."""
    value = response.headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    from datetime import UTC, datetime

    return max(0.0, (when - datetime.now(UTC)).total_seconds())


@dataclass
class PythonJudge:
    """A judge in the team's own code: ``grade_fn(question, document_text) -> int`` (0-3)."""

    name: str
    grade_fn: Callable[[str, str], Any]
    settings: dict[str, Any]
    max_concurrency: int = 1
    model: str | None = None
    prompt_fingerprint: str | None = None

    @property
    def identity(self) -> str:
        return identity_of({"type": "python", **self.settings})

    def close(self) -> None:
        pass

    def grade(self, question: str, document_text: str) -> Answer:
        try:
            value = self.grade_fn(question, document_text)
        except Exception as exc:
            return Answer(None, redact(f"raised {type(exc).__name__}: {exc}")[:200], answered=False)
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 3:
            return Answer(None, f"returned {quote_body(repr(value), 60)}, not a grade 0-3")
        return Answer(int(value))


@dataclass(frozen=True, slots=True)
class Asked:
    """One pair to grade: its position in the caller's list, the question and the text."""

    index: int
    question: str
    document_text: str


@dataclass
class Tally:
    """A run's running totals, for the progress line."""

    total: int
    done: int = 0
    graded: int = 0
    unjudged: int = 0
    cost_usd: float = 0.0
    stopped: str | None = None  # why it stopped before every pair was asked
    error: str | None = None  # the endpoint refused a request: the run's answers are still kept


def judge_all(
    judge: Judge,
    pairs: Sequence[Asked],
    *,
    max_pairs: int | None = None,
    max_cost_usd: float | None = None,
    spent_usd: float = 0.0,
    on_answer: Callable[[Tally], None] | None = None,
) -> tuple[dict[int, Answer], Tally]:
    """Ask ``judge`` about ``pairs`` (at most its ``max_concurrency`` at once): their answers by
    index, and the tally. It stops asking at ``max_pairs`` or once the cost (``spent_usd`` and
    this run's) reaches ``max_cost_usd``; answers in flight are kept. A
    :class:`JudgeUnavailableError` stops it too: its message is the tally's ``error``."""
    tally = Tally(total=len(pairs), cost_usd=spent_usd)
    answers: dict[int, Answer] = {}
    limit = len(pairs) if max_pairs is None else min(max_pairs, len(pairs))
    fatal: JudgeUnavailableError | None = None
    queue = iter(pairs[:limit])
    running: dict[Future[Answer], Asked] = {}

    def over_budget() -> bool:
        return max_cost_usd is not None and tally.cost_usd >= max_cost_usd

    with ThreadPoolExecutor(max_workers=judge.max_concurrency, thread_name_prefix="judge") as pool:
        while True:
            while fatal is None and not over_budget() and len(running) < judge.max_concurrency:
                item = next(queue, None)
                if item is None:
                    break
                running[pool.submit(judge.grade, item.question, item.document_text)] = item
            if not running:
                break
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                item = running.pop(future)
                try:
                    answer = future.result()
                except JudgeUnavailableError as exc:
                    fatal = fatal or exc
                    continue
                answers[item.index] = answer
                tally.done += 1
                tally.cost_usd += answer.cost_usd
                if answer.grade is None:
                    tally.unjudged += 1
                else:
                    tally.graded += 1
                if on_answer is not None:
                    on_answer(tally)
    if fatal is not None:
        tally.stopped = "the judge's endpoint refused a request"
        tally.error = str(fatal)
    elif tally.done < len(pairs):
        if over_budget():
            tally.stopped = f"the cost cap of ${max_cost_usd:g} was reached"
        elif max_pairs is not None and tally.done >= max_pairs:
            tally.stopped = f"--max-pairs {max_pairs} was reached"
    return answers, tally
