"""Hand-made runs and throwaway PostgreSQL schemas for tests (imported as ``store.builders``)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy.engine import make_url

from retrieval_eval.evaluation.aggregate import summarise
from retrieval_eval.evaluation.results import QuestionResult, RunResult, RunSettings
from retrieval_eval.golden.models import QuestionForm
from retrieval_eval.store.models import StoredRun

T0 = datetime(2026, 1, 1, 3, 0, tzinfo=UTC)


def question(
    qid: str,
    top1: bool,
    top3: bool | None = None,
    *,
    form: str = "match",
    hard_class: str | None = None,
    error: str | None = None,
    latency_ms: float | None = 5.0,
) -> QuestionResult:
    top3 = top1 if top3 is None else top3
    return QuestionResult(
        id=qid,
        question=f"question {qid}?",
        form=QuestionForm(form),
        hard_class=hard_class,
        expected_document_ids=[f"doc-{qid}"],
        top1_hit=top1 and error is None,
        top3_hit=top3 and error is None,
        first_hit_rank=(1 if top1 else 2 if top3 else None) if error is None else None,
        retrieved=[] if error else _ranking(qid, top1, top3),
        latency_ms=None if error else latency_ms,
        error=error,
    )


def _ranking(qid: str, top1: bool, top3: bool) -> list[str]:
    if top1:
        return [f"doc-{qid}", "other"]
    return ["other", f"doc-{qid}"] if top3 else ["other"]


def hits(n_hits: int, n: int, *, prefix: str = "q", **kwargs: Any) -> list[QuestionResult]:
    """``n`` questions of which the first ``n_hits`` are hits at top-1 and top-3."""
    return [question(f"{prefix}{i:03d}", i < n_hits, **kwargs) for i in range(n)]


def make_run(
    questions: list[QuestionResult],
    *,
    set_identifier: str = "demo.set",
    retriever: str = "bm25",
    fingerprint: str = "fp-1",
    day: int = 0,
    max_error_rate: float = 0.0,
    run_key: str | None = None,
    **kwargs: Any,
) -> RunResult:
    """A summarised run that started ``day`` days after T0 (later days are newer runs)."""
    started = T0 + timedelta(days=day)
    return summarise(
        questions,
        set_identifier=set_identifier,
        labels_fingerprint=fingerprint,
        retriever=retriever,
        settings=RunSettings(max_error_rate=max_error_rate),
        started_at=started,
        finished_at=started + timedelta(seconds=3),
        run_key=run_key,
        **kwargs,
    )


def ranked_run(
    ranks: dict[str, int | None],
    depths: list[int],
    *,
    day: int = 0,
    forms: dict[str, str] | None = None,
    classes: dict[str, str] | None = None,
    retriever: str = "bm25",
    fetched: int = 40,
) -> RunResult:
    """A run judged by the real scorer at ``depths``: question ``qid``'s one target sits at rank
    ``ranks[qid]`` (None: not retrieved) of a ranking of ``fetched`` ids."""
    from retrieval_eval.evaluation.scoring import score_many
    from retrieval_eval.golden.models import GoldenQuestion

    questions = [
        GoldenQuestion(
            id=qid,
            question=f"question {qid}?",
            form=(forms or {}).get(qid, "match"),
            hard_class=(classes or {}).get(qid),
            expected_document_ids=(f"doc-{qid}",),
        )
        for qid in ranks
    ]
    rankings = []
    for qid, rank in ranks.items():
        ranking = [f"other-{qid}-{i}" for i in range(fetched)]
        if rank is not None:
            ranking[rank - 1] = f"doc-{qid}"
        rankings.append(ranking)
    started = T0 + timedelta(days=day)
    return summarise(
        score_many(questions, rankings, depth=max(depths)),
        set_identifier="demo.set",
        labels_fingerprint="fp-1",
        retriever=retriever,
        settings=RunSettings(depths=depths),
        started_at=started,
        finished_at=started + timedelta(seconds=3),
    )


def as_stored(result: RunResult, run_id: int = 7, **kwargs: Any) -> StoredRun:
    """A StoredRun without a database, for verdict tests."""
    return StoredRun(
        id=run_id,
        grader="retrieval_hit_rate",
        status="valid" if result.valid else "invalid",
        run_date=result.started_at,
        created_at=result.finished_at,
        result=result,
        **kwargs,
    )


@contextmanager
def pg_schema(base_url: str) -> Iterator[str]:
    """A store URL confined to a new, empty schema (``search_path``), dropped afterwards."""
    import psycopg

    schema = f"re_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(base_url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    url = make_url(base_url).update_query_dict({"options": f"-csearch_path={schema}"})
    try:
        yield url.render_as_string(hide_password=False)
    finally:
        with psycopg.connect(base_url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
