"""A model judge over pooled pairs (``sets judge auto``) and its calibration (``sets judge
calibrate``), on :mod:`retrieval_eval.workflows.base`'s shape so Airflow can map the batches.

plan: the pairs in batches (each with its share of ``max_pairs`` and of the cost cap);
execute: the cache's answers, then the judge asked about the rest
(:func:`retrieval_eval.labels.model_judges.judge_all`), storing nothing; reduce: the answers in
plan order; record: new answers into the cache, the judgments into the ``judgment`` table
(rater ``judge:<name>``, with identity, model, prompt fingerprint, tokens and cost). An answer
the judge gave but that cannot be read is stored unjudged with its reason; a pair without an
answer (deadline, HTTP error) is counted with its reason and asked again next time.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel

from retrieval_eval.labels.judged import MACHINE_PREFIX, is_machine
from retrieval_eval.workflows.base import Workflow, register

if TYPE_CHECKING:
    from retrieval_eval.config.models import Config
    from retrieval_eval.golden.models import GoldenQuestionSet
    from retrieval_eval.labels.judgments import Judgment
    from retrieval_eval.labels.model_judges import Judge, Tally
    from retrieval_eval.store import Store


class PairToJudge(BaseModel):
    """One (question, document) pair with the texts the judge reads."""

    question_id: str | None = None
    question: str  # the question's text
    document_id: str
    text: str  # the document's text (the pool's)
    source: str | None = None

    @property
    def question_key(self) -> str:
        return self.question_id if self.question_id is not None else f"text:{self.question}"


class JudgeJob(BaseModel):
    config_path: str | None = None
    db: str | None = None  # --db as given; None: the config's store, $RETRIEVAL_EVAL_DB
    set_identifier: str
    judge: str
    pairs: list[PairToJudge]
    max_pairs: int | None = None
    written_by: str = "unknown"
    store_judgments: bool = True  # False (calibration): the answers cached, no judgment rows
    max_batches: int | None = None  # the most batches Airflow maps (None: as many as it asks)


class JudgeBatch(BaseModel):
    start: int
    pairs: list[PairToJudge]
    max_pairs: int | None = None
    max_cost_usd: float | None = None


class PairAnswer(BaseModel):
    index: int
    grade: int | None = None
    reason: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    answered: bool = True
    cached: bool = False


class JudgePart(BaseModel):
    answers: list[PairAnswer]
    stopped: str | None = None
    error: str | None = None


class JudgeReduced(BaseModel):
    answers: list[PairAnswer]
    stopped: str | None = None
    error: str | None = None


class JudgeOutcome(BaseModel):
    """What a judging run did: counts, cost, why it stopped, and the unjudged reasons."""

    judge: str
    identity: str
    model: str | None = None
    pairs: int
    asked: int
    from_cache: int
    graded: int
    unjudged: int
    not_asked: int
    cost_usd: float
    stored: int
    stopped: str | None = None
    error: str | None = None
    reasons: dict[str, int] = {}
    grades: dict[int, int] = {}  # pair index -> grade, for calibration


@register
class JudgeWorkflow(Workflow[JudgeJob, JudgeBatch, JudgePart, JudgeReduced, JudgeOutcome]):
    """Ask a model judge about pooled pairs; the cache spares what was asked before."""

    name: ClassVar[str] = "judge"
    job_type = JudgeJob
    batch_type = JudgeBatch
    part_type = JudgePart
    reduced_type = JudgeReduced
    outcome_type = JudgeOutcome
    on_answer: Callable[[Tally], None] | None = None  # the CLI's progress line

    def __init__(self, job: JudgeJob) -> None:
        super().__init__(job)
        self._judge: Judge | None = None
        self._config: Config | None = None

    @property
    def config(self) -> Config:
        if self._config is None:
            from retrieval_eval.config.models import load_config

            self._config = load_config(self.job.config_path)
        return self._config

    @property
    def judge(self) -> Judge:
        if self._judge is None:
            self._judge = build_judge(self.config, self.job.judge)
        return self._judge

    def _store(self) -> Store:
        from retrieval_eval.store import open_store, resolve_store_url

        return open_store(resolve_store_url(self.job.db, self.config))

    def plan(self, max_batches: int = 1) -> list[JudgeBatch]:
        pairs = self.job.pairs
        count = max(1, min(max_batches, self.job.max_batches or max_batches, len(pairs)))
        size = math.ceil(len(pairs) / count) if pairs else 0
        cap = getattr(self.config.judge_spec(self.job.judge), "max_cost_usd", None)
        batches = []
        for n in range(count):
            share = None
            if self.job.max_pairs is not None:  # the first batches take the remainder
                share = self.job.max_pairs // count + (1 if n < self.job.max_pairs % count else 0)
            batches.append(
                JudgeBatch(
                    start=n * size,
                    pairs=pairs[n * size : (n + 1) * size],
                    max_pairs=share,
                    max_cost_usd=None if cap is None else cap / count,
                )
            )
        return batches

    def execute(self, batch: JudgeBatch) -> JudgePart:
        from retrieval_eval.labels.model_judges import Asked, cache_key, judge_all

        judge = self.judge
        keys = [cache_key(judge.identity, p.question, p.text) for p in batch.pairs]
        with self._store() as store:
            cached = store.judges.cached_answers(keys)
        answers: list[PairAnswer] = []
        asks = []
        for offset, (pair, key) in enumerate(zip(batch.pairs, keys, strict=True)):
            hit = cached.get(key)
            if hit is None:
                asks.append(Asked(offset, pair.question, pair.text))
                continue
            answers.append(_answer(batch.start + offset, hit, cached=True))
        found, tally = judge_all(
            judge,
            asks,
            max_pairs=batch.max_pairs,
            max_cost_usd=batch.max_cost_usd,
            on_answer=self.on_answer,
        )
        for offset, answer in found.items():
            answers.append(_answer(batch.start + offset, answer, answered=answer.answered))
        answers.sort(key=lambda a: a.index)
        return JudgePart(answers=answers, stopped=tally.stopped, error=tally.error)

    def reduce(self, parts: Sequence[JudgePart]) -> JudgeReduced:
        return JudgeReduced(
            answers=[a for part in parts for a in part.answers],
            stopped=next((p.stopped for p in parts if p.stopped), None),
            error=next((p.error for p in parts if p.error), None),
        )

    def record(self, reduced: JudgeReduced) -> JudgeOutcome:
        from retrieval_eval.labels.judgments import Judgment
        from retrieval_eval.labels.model_judges import cache_key
        from retrieval_eval.store.judges import Audit, CachedAnswer

        judge = self.judge
        pairs = self.job.pairs
        fresh = [a for a in reduced.answers if a.answered and not a.cached]
        rows: list[tuple[Judgment, Audit]] = []
        for a in reduced.answers:
            if not a.answered:
                continue
            pair = pairs[a.index]
            rows.append(
                (
                    Judgment(
                        question_id=pair.question_id,
                        question=pair.question if pair.question_id is None else None,
                        document_id=pair.document_id,
                        grade=a.grade,
                        rater=MACHINE_PREFIX + self.job.judge,
                        note=a.reason,
                        source=pair.source,
                    ),
                    Audit(
                        judge.identity,
                        judge.model,
                        judge.prompt_fingerprint,
                        a.input_tokens,
                        a.output_tokens,
                        a.cost_usd,
                    ),
                )
            )
        with self._store() as store:
            store.judges.save_answers(
                [
                    CachedAnswer(
                        cache_key(judge.identity, pairs[a.index].question, pairs[a.index].text),
                        judge.identity,
                        a.grade,
                        a.reason,
                        judge.model,
                        a.input_tokens,
                        a.output_tokens,
                        a.cost_usd,
                    )
                    for a in fresh
                ],
            )
            stored = 0
            if self.job.store_judgments:
                stored = store.judges.add(
                    self.job.set_identifier, rows, written_by=self.job.written_by
                )
        judge.close()
        reasons = Counter(_reason_kind(a.reason) for a in reduced.answers if a.grade is None)
        return JudgeOutcome(
            judge=self.job.judge,
            identity=judge.identity,
            model=judge.model,
            pairs=len(pairs),
            asked=sum(1 for a in reduced.answers if not a.cached),
            from_cache=sum(1 for a in reduced.answers if a.cached),
            graded=sum(1 for a in reduced.answers if a.grade is not None),
            unjudged=sum(1 for a in reduced.answers if a.grade is None),
            not_asked=len(pairs) - len(reduced.answers),
            cost_usd=sum(a.cost_usd for a in reduced.answers if not a.cached),
            stored=stored,
            stopped=reduced.stopped,
            error=reduced.error,
            reasons=dict(reasons),
            grades={a.index: a.grade for a in reduced.answers if a.grade is not None},
        )


def _answer(index: int, given: Any, **flags: bool) -> PairAnswer:
    """A pair's answer from a cached or a fresh one (both have grade, reason, tokens, cost)."""
    return PairAnswer(
        index=index,
        grade=given.grade,
        reason=given.reason,
        input_tokens=given.input_tokens,
        output_tokens=given.output_tokens,
        cost_usd=given.cost_usd,
        **flags,
    )


def _reason_kind(reason: str | None) -> str:
    """A reason's kind for the summary (its words before the first colon or parenthesis)."""
    text = reason or "no reason given"
    for mark in (":", "("):
        text = text.split(mark, 1)[0]
    return text.strip()


def build_judge(config: Config, name: str) -> Judge:
    """The judge ``name`` of the config, its key read (and registered for redaction)."""
    from retrieval_eval.config.models import OpenAIJudgeSpec
    from retrieval_eval.errors import ConfigError
    from retrieval_eval.labels.model_judges import (
        UMBRELA_PROMPT,
        OpenAIJudge,
        PythonJudge,
        check_prompt,
    )

    spec = config.judge_spec(name)
    where = f"{config.source}: judges.{name}"
    if isinstance(spec, OpenAIJudgeSpec):
        from retrieval_eval.retrievers.secrets import airflow_connection, env_key

        key = None
        base_url = spec.base_url
        if spec.api_key_from_env is not None:
            key = env_key(spec.api_key_from_env, f"{where}.api_key_from_env")
        elif spec.connection_id is not None:
            connection = airflow_connection(spec.connection_id, f"{where}.connection_id")
            key = connection.password or None
            if connection.host:
                base_url = str(connection.host).rstrip("/")
        prompt = UMBRELA_PROMPT
        if spec.prompt is not None:
            path = config.resolve(spec.prompt)
            try:
                prompt = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise ConfigError(f"{where}.prompt: cannot read {path}: {exc}") from None
            try:
                check_prompt(prompt, f"{where}.prompt ({path})")
            except ValueError as exc:
                raise ConfigError(str(exc)) from None
        return OpenAIJudge(
            name=name,
            model=spec.model,
            base_url=base_url,
            api_key=key,
            prompt=prompt,
            temperature=spec.temperature,
            max_tokens=spec.max_tokens,
            max_concurrency=spec.max_concurrency,
            requests_per_minute=spec.requests_per_minute,
            input_price_per_1k=spec.input_price_per_1k,
            output_price_per_1k=spec.output_price_per_1k,
            timeout_s=spec.timeout_s,
            deadline_s=spec.deadline_s,
            backoff_s=spec.backoff_s,
        )
    from retrieval_eval.retrievers.registry import import_object

    factory = import_object(
        spec.factory,
        paths=[config.resolve(p) for p in spec.paths],
        config_dir=config.base_dir,
        fixes=True,
    )
    try:
        grade_fn = factory(**spec.options)
    except TypeError as exc:
        raise ConfigError(f"{where}.options: {exc}") from None
    if not callable(grade_fn):
        raise ConfigError(
            f"{where}.factory: {spec.factory} returned {type(grade_fn).__name__}, not a "
            "grade(question, document_text) -> int function"
        )
    settings = {"factory": spec.factory, "options": spec.options, "version": spec.version}
    return PythonJudge(name, grade_fn, settings, spec.max_concurrency)


def pairs_from_rows(
    golden: GoldenQuestionSet, rows: Sequence[Judgment]
) -> tuple[list[PairToJudge], dict[str, int]]:
    """The pairs to judge from pool rows: each (question, document) once, with its text; rows
    left out are counted by why (graded already, no text, an unknown question id)."""
    texts = {q.id: q.question for q in golden.questions}
    seen: set[tuple[str, str]] = set()
    pairs: list[PairToJudge] = []
    left: Counter[str] = Counter()
    for row in rows:
        if row.grade is not None:
            left["graded already"] += 1
            continue
        if not row.text:
            left["no document text"] += 1
            continue
        if row.question_id is not None and row.question_id not in texts:
            left["not a question of the set"] += 1
            continue
        key = (row.question_key, row.document_id)
        if key in seen:
            continue
        seen.add(key)
        question = texts[row.question_id] if row.question_id is not None else str(row.question)
        pairs.append(PairToJudge(
            question_id=row.question_id,
            question=question,
            document_id=row.document_id,
            text=row.text,
            source=row.source,
        ))  # fmt: skip
    return pairs, dict(left)


# ---- calibration -------------------------------------------------------------------------


class Calibration(BaseModel):
    """A judge's calibration on a set, as ``sets judge calibrate`` prints and stores it."""

    id: int | None = None
    set_identifier: str
    judge: str
    identity: str
    model: str | None = None
    prompt_fingerprint: str | None = None
    people_pairs: int  # people-graded pairs found (before sampling)
    without_text: int  # of those, pairs with no document text to show the judge
    sampled: int
    unjudged: int  # sampled pairs the judge left unjudged (not in κ)
    pairs: int  # pairs κ is measured over
    seed: int
    kappa: float | None
    kappa_low: float | None
    kappa_high: float | None
    confidence: float
    confusion: list[list[int]]
    per_grade: dict[int, float | None]
    exact: float | None
    tau: float | None
    depth: int
    rates: dict[str, dict[str, float]] = {}  # retriever -> {"people": rate, "judge": rate}
    min_kappa: float
    passed: bool
    cost_usd: float = 0.0
    asked: int = 0


def people_grades(
    golden: GoldenQuestionSet, rows: Sequence[Judgment]
) -> dict[tuple[str, str], int]:
    """People's grade of every pair: the set's labels (a target without a grade counts 1), then
    people's judgments merged per pair (:func:`~retrieval_eval.labels.agreement.merged_grade`,
    a model judge's rows left out)."""
    from collections import defaultdict

    from retrieval_eval.labels.agreement import merged_grade

    grades: dict[tuple[str, str], int] = {}
    for q in golden.questions:
        for doc in q.expected_document_ids:
            grades[(q.id, doc)] = max(1, (q.grades or {}).get(doc, 1))
        for doc, grade in (q.grades or {}).items():
            grades.setdefault((q.id, doc), grade)
    by_pair: dict[tuple[str, str], dict[str, int]] = defaultdict(dict)
    for row in rows:
        if row.grade is not None and not is_machine(row.rater):
            by_pair[(row.question_key, row.document_id)][row.rater or "anonymous"] = row.grade
    grades.update({pair: merged_grade(list(g.values())) for pair, g in by_pair.items()})
    return grades


def calibrate(
    config: Config,
    golden: GoldenQuestionSet,
    judge_name: str,
    *,
    db: str | None,
    files: Sequence[Judgment] = (),
    retrievers: Sequence[str] = (),
    size: int | None = 500,
    seed: int = 0,
    depth: int = 10,
    written_by: str = "unknown",
    on_answer: Callable[[Tally], None] | None = None,
    min_kappa: float | None = None,
) -> Calibration:
    """Compare the judge with people on the pairs people graded (``size`` sampled by ``seed``),
    rank the set's stored retrievers under both labels, store the result and return it; it
    passes at the judge's ``min_kappa``, or at ``min_kappa`` when given (a labelling entry's)."""
    from contextlib import ExitStack

    from retrieval_eval.labels.calibration import agreement_figures, hit_rate, ranking_tau, sample
    from retrieval_eval.labels.pooling import excerpt
    from retrieval_eval.store import open_store, resolve_store_url
    from retrieval_eval.workflows.labelled_run import opened_retriever
    from retrieval_eval.workflows.leaderboard import latest_run
    from retrieval_eval.workflows.pool import _texts

    spec = config.judge_spec(judge_name)
    required = spec.min_kappa if min_kappa is None else min_kappa
    with open_store(resolve_store_url(db, config)) as store:
        stored = store.judgments.stored(golden.identifier)
    people = people_grades(golden, [s.judgment for s in stored] + list(files))
    text_of = {(r.question_key, r.document_id): r.text for r in files if r.text}
    candidates = sorted(people)
    missing = sorted({doc for pair in candidates if pair not in text_of for doc in [pair[1]]})
    by_doc: dict[str, str] = {}
    if missing and retrievers:
        notes: list[str] = []
        with ExitStack() as stack:
            opened = {n: stack.enter_context(opened_retriever(config, n)) for n in retrievers}
            # as the pool shows them (its excerpt): the judge reads what `judge auto` gives it
            by_doc = {doc: excerpt(text) for doc, text in _texts(opened, missing, notes).items()}
    questions = {q.id: q.question for q in golden.questions}
    with_text = []
    for pair in candidates:
        text = text_of.get(pair) or by_doc.get(pair[1])
        qid, doc = pair
        question = questions.get(qid) if not qid.startswith("text:") else qid[5:]
        if text and question:
            with_text.append(PairToJudge(
                question_id=None if qid.startswith("text:") else qid,
                question=question,
                document_id=doc,
                text=text,
                source="calibration",
            ))  # fmt: skip
    chosen = sample(with_text, size, seed)
    job = JudgeJob(
        config_path=str(config.path) if config.path else None,
        db=db,
        set_identifier=golden.identifier,
        judge=judge_name,
        pairs=chosen,
        written_by=written_by,
        store_judgments=False,  # people graded these pairs: their grades stay the labels
    )
    workflow = JudgeWorkflow(job)
    workflow._config = config
    workflow.on_answer = on_answer
    from retrieval_eval.workflows.base import run_in_process

    outcome = run_in_process(workflow)
    if outcome.error:
        from retrieval_eval.labels.model_judges import JudgeUnavailableError

        raise JudgeUnavailableError(f"{outcome.error}; nothing was calibrated")
    both = [
        (people[(chosen[i].question_key, chosen[i].document_id)], g)
        for i, g in outcome.grades.items()
    ]
    figures = agreement_figures([a for a, _ in both], [b for _, b in both], seed=seed)

    # Kendall's τ over the stored runs: people's labels against the judge's where it graded
    with open_store(resolve_store_url(db, config)) as store:
        machine = {
            (s.judgment.question_key, s.judgment.document_id): s.judgment.grade
            for s in store.judgments.stored(golden.identifier)
            if s.judge_identity == outcome.identity and s.judgment.grade is not None
        }
        for index, grade in outcome.grades.items():  # and its answers on the people's pairs
            machine[(chosen[index].question_key, chosen[index].document_id)] = grade
        runs = [
            latest_run(store, golden.identifier, n)
            for n in store.runs.retrievers_for(golden.identifier)
        ]
        judged_by_machine = {**people, **machine}
        relevance = config.run.relevance_level
        rates = {}
        for run in runs:
            rankings = {q.id: list(q.retrieved) for q in run.result.questions}
            rates[run.result.retriever] = {
                "people": hit_rate(rankings, people, depth, relevance),
                "judge": hit_rate(rankings, judged_by_machine, depth, relevance),
            }
        tau = ranking_tau(
            {n: r["people"] for n, r in rates.items()}, {n: r["judge"] for n, r in rates.items()}
        )
        passed = figures.kappa is not None and figures.kappa >= required
        result = Calibration(
            set_identifier=golden.identifier,
            judge=judge_name,
            identity=outcome.identity,
            model=outcome.model,
            prompt_fingerprint=getattr(workflow.judge, "prompt_fingerprint", None),
            people_pairs=len(candidates),
            without_text=len(candidates) - len(with_text),
            sampled=len(chosen),
            unjudged=len(chosen) - len(both),
            pairs=figures.pairs,
            seed=seed,
            kappa=figures.kappa,
            kappa_low=figures.kappa_low,
            kappa_high=figures.kappa_high,
            confidence=figures.confidence,
            confusion=figures.confusion,
            per_grade=figures.per_grade,
            exact=figures.exact,
            tau=tau,
            depth=depth,
            rates=rates,
            min_kappa=required,
            passed=passed,
            cost_usd=outcome.cost_usd,
            asked=outcome.asked,
        )
        result.id = store.judges.add_calibration(
            {
                "set_identifier": golden.identifier,
                "judge": judge_name,
                "judge_identity": outcome.identity,
                "model": result.model,
                "prompt_fingerprint": result.prompt_fingerprint,
                "pairs": result.pairs,
                "seed": seed,
                "kappa": result.kappa,
                "kappa_low": result.kappa_low,
                "kappa_high": result.kappa_high,
                "tau": tau,
                "min_kappa": required,
                "passed": passed,
                "figures": result.model_dump(
                    mode="json",
                    include={
                        "confusion",
                        "per_grade",
                        "exact",
                        "rates",
                        "depth",
                        "sampled",
                        "unjudged",
                        "people_pairs",
                        "confidence",
                    },
                ),
                "written_by": written_by,
            },
        )
    return result
