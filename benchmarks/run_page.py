"""The dashboard's run page: a 200,000-question run against a 50-question one (issue 25, item 6).

Each size is a run recorded against a baseline of its size through ``record_run`` (the real
verdict: five questions flipped to a miss, so both pages show the same flips), on SQLite and on
PostgreSQL (a fresh schema; skipped when the server is not there). The pages are served by the
dashboard app in this process (``create_app``, Starlette's test client: routing, the store's
queries, the template), alternating, best of each:

- the run page, HTML and its JSON twin, 200,000 against 50 questions (target ≤ 3×);
- information rows, each against the 50-question run's default page: a page deep in the run,
  ``show=misses&form=gap`` (both served from the listing index), ``hard_class=numeric`` and
  ``show=errors`` (read each question row of the groups they look in, in the database);
- peak memory: a fresh process serving the page three times, its ``VmHWM``, 200,000 against 50
  questions (target ≤ 1.5×: the page holds its 50 questions, never the run).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from benchmarks.common import (
    ROOT,
    Row,
    best_times,
    drop_pg_schema,
    pg_schema,
    proc_status,
    seconds,
)

BIG = int(os.environ.get("RUN_PAGE_BENCH_QUESTIONS", "200000"))
SMALL = 50
FLIPPED = 5
PG = os.environ.get("RETRIEVAL_EVAL_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
VARIANTS = {
    "deep page": "?page={last}",
    "show=misses&form=gap": "?show=misses&form=gap",
    "hard_class=numeric": "?hard_class=numeric",
    "show=errors": "?show=errors",
}


def _questions(n: int, flipped: bool) -> list[Any]:
    """``n`` questions, 80 % top-3 and 64 % top-1 hits, a 12-id ranking each; ``flipped``
    turns the first :data:`FLIPPED` top-1 hits into misses."""
    from retrieval_eval.evaluation.results import QuestionResult
    from retrieval_eval.golden.models import QuestionForm

    out = []
    turned = 0
    for i in range(n):
        top3 = i % 5 != 1
        top1 = top3 and i % 5 != 2
        if flipped and top1 and turned < FLIPPED:
            top1 = top3 = False
            turned += 1
        expected = f"doc-{i}"
        ranking = [f"other-{i}-{j}" for j in range(11)]
        if top3:
            ranking.insert(0 if top1 else 1, expected)
        out.append(
            QuestionResult(
                id=f"q{i:06d}",
                question=f"How does feature {i} behave with setting {i % 97}?",
                form=QuestionForm.GAP if i % 3 == 0 else QuestionForm.MATCH,
                hard_class=(None, "negation", "numeric")[i % 3],
                expected_document_ids=[expected],
                top1_hit=top1,
                top3_hit=top3,
                first_hit_rank=(1 if top1 else 2) if top3 else None,
                retrieved=ranking,
                latency_ms=5.0,
            )
        )
    return out


def _fill(url: str) -> dict[int, int]:
    """Record a baseline and a run for each size; the runs' ids by size."""
    from retrieval_eval.config.models import Thresholds
    from retrieval_eval.evaluation.aggregate import summarise
    from retrieval_eval.workflows.recording import record_run

    start = datetime(2026, 1, 1, tzinfo=UTC)
    ids = {}
    for n in (SMALL, BIG):
        for day, flipped in enumerate((False, True)):
            started = start + timedelta(days=day)
            result = summarise(
                _questions(n, flipped),
                set_identifier=f"bench.{n}",
                labels_fingerprint="fp",
                retriever="bm25",
                started_at=started,
                finished_at=started + timedelta(seconds=1),
            )
            recorded = record_run(result, store_url=url, thresholds=Thresholds())
            assert recorded.saved and recorded.run_id is not None, recorded
            ids[n] = recorded.run_id
    return ids


def child(url: str, run_id: str) -> None:
    """Serve the run page three times in this fresh process; print its peak resident set."""
    from fastapi.testclient import TestClient

    from retrieval_eval.webui.app import create_app

    client = TestClient(create_app(url, require_auth=False))
    for _ in range(3):
        assert client.get(f"/runs/{run_id}").status_code == 200
    print(json.dumps({"peak": proc_status("VmHWM")}))


def _peak(url: str, run_id: int) -> int:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.run_page", "--child", url, str(run_id)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    return int(json.loads(done.stdout.strip().splitlines()[-1])["peak"])


def _backend(name: str, url: str) -> list[Row]:
    from fastapi.testclient import TestClient

    from retrieval_eval.webui.app import create_app

    ids = _fill(url)
    app = create_app(url, require_auth=False)
    client = TestClient(app)

    def get(path: str) -> Callable[[], None]:
        def call() -> None:
            answer = client.get(path)
            assert answer.status_code == 200, answer.text[:300]

        return call

    small, big = f"/runs/{ids[SMALL]}", f"/runs/{ids[BIG]}"
    last = -(-BIG // 50)
    pages = {
        "small": get(small),
        "big": get(big),
        "small json": get(f"/api{small}"),
        "big json": get(f"/api{big}"),
        **{variant: get(big + query.format(last=last)) for variant, query in VARIANTS.items()},
    }
    try:
        best = best_times(pages, repeat=15, budget_s=90)
    finally:
        app.state.store_source.close()
    peaks = {n: _peak(url, ids[n]) for n in (SMALL, BIG)}
    rows = []
    for label, ours, reference in (("HTML", "big", "small"), ("JSON", "big json", "small json")):
        ratio = best[ours] / best[reference]
        rows.append(
            Row(
                f"6. run page {label}, {BIG:,} vs {SMALL} questions ({name})",
                seconds(best[ours]),
                seconds(best[reference]),
                ratio,
                "≤ 3.00",
                ratio <= 3.0,
                f"both runs judged against a baseline of their size, {FLIPPED} flips each",
            )
        )
    for variant in VARIANTS:
        rows.append(
            Row(
                f"6. run page {variant}, {BIG:,} questions ({name})",
                seconds(best[variant]),
                seconds(best["small"]),
                best[variant] / best["small"],
                "–",
                None,
                f"against the {SMALL}-question run's default page",
            )
        )
    ratio = peaks[BIG] / peaks[SMALL]
    rows.append(
        Row(
            f"6. run page peak memory, {BIG:,} vs {SMALL} questions ({name})",
            f"{peaks[BIG] / 2**20:.0f} MiB",
            f"{peaks[SMALL] / 2**20:.0f} MiB",
            ratio,
            "≤ 1.50",
            ratio <= 1.5,
            "VmHWM of a fresh process serving the page three times (imports included)",
        )
    )
    return rows


def run() -> list[Row]:
    with tempfile.TemporaryDirectory() as folder:
        rows = _backend("SQLite", f"sqlite:///{folder}/results.sqlite")
    try:
        schema, url = pg_schema(PG)
    except Exception as exc:  # no server: the SQLite figures still stand
        note = f"PostgreSQL at {PG} is not reachable ({type(exc).__name__})"
        return [*rows, Row("6. run page (PostgreSQL)", "–", "–", None, "≤ 3.00", None, note)]
    try:
        rows += _backend("PostgreSQL", url.replace("postgresql://", "postgresql+psycopg://"))
    finally:
        drop_pg_schema(PG, schema)
    return rows


if __name__ == "__main__" and sys.argv[1:2] == ["--child"]:
    child(*sys.argv[2:4])
