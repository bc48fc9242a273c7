"""Benchmark 3: 2,000 questions against the ``http`` adapter and a 20 ms loopback service.

At ``max_concurrency`` 1, 8 and 32, the run's wall time is compared with the ideal
``questions × latency / concurrency``; the figure is ideal / measured (1.0 = no overhead at all).
The service runs in its own process (:mod:`benchmarks.loopback_server`), so the client's costs
(HTTP, the per-question timeout thread, judging, aggregation) are what is measured. A last row
compares the run at 32 with a bare loop of the same HTTP client (urllib3, 32 threads, no library):
what the library itself adds.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from benchmarks.common import ROOT, Row, seconds
from benchmarks.synthetic import synthetic
from retrieval_eval.evaluation.results import RunSettings
from retrieval_eval.evaluation.scoring import evaluate
from retrieval_eval.golden.models import GoldenQuestionSet
from retrieval_eval.retrievers.http import HttpOptions, HttpRetriever

QUESTIONS = 2_000
LATENCY_S = 0.020
LEVELS = (1, 8, 32)


def run() -> list[Row]:
    server = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.loopback_server", str(LATENCY_S)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        questions, _ = synthetic(QUESTIONS, seed=3)
        golden = GoldenQuestionSet(identifier="bench.http", questions=questions)
        rows = []
        elapsed_at: dict[int, float] = {}
        for level in LEVELS:
            options = HttpOptions(
                url=f"http://127.0.0.1:{port}/search",
                ids="hits.hits[*]._id",
                max_concurrency=level,
            )
            retriever = HttpRetriever("loopback", options)
            try:
                warm = GoldenQuestionSet(identifier="bench.warm", questions=questions[:100])
                evaluate(warm, retriever, RunSettings(max_concurrency=level))  # open the pool
                started = time.perf_counter()
                result = evaluate(golden, retriever, RunSettings(max_concurrency=level))
                elapsed = time.perf_counter() - started
            finally:
                retriever.close()
            if result.error_count:
                raise AssertionError(f"{result.error_count} questions errored at {level}")
            elapsed_at[level] = elapsed
            ideal = QUESTIONS * LATENCY_S / level
            efficiency = ideal / elapsed
            rows.append(
                Row(
                    f"3. http, 2,000 q × 20 ms, max_concurrency {level}",
                    seconds(elapsed),
                    f"ideal {seconds(ideal)}",
                    efficiency,
                    "≥ 0.85" if level == 32 else "context",
                    efficiency >= 0.85 if level == 32 else None,
                    (
                        f"{QUESTIONS / elapsed:,.0f} questions/s; ratio = ideal / measured"
                        if level == 32
                        else ""
                    ),
                )
            )
        bare = _bare_client(f"http://127.0.0.1:{port}/search", [q.question for q in questions])
        measured_32 = elapsed_at[LEVELS[-1]]
        rows.append(
            Row(
                "3. http at 32 vs a bare urllib3 loop, 32 threads",
                seconds(measured_32),
                seconds(bare),
                measured_32 / bare,
                "context",
                None,
                "what the library adds over its HTTP client (urllib3) alone",
            )
        )
        stdlib = _bare_stdlib(port, [q.question for q in questions])
        rows.append(
            Row(
                "3. ideal vs a bare http.client loop, 32 threads",
                seconds(stdlib),
                f"ideal {seconds(QUESTIONS * LATENCY_S / LEVELS[-1])}",
                QUESTIONS * LATENCY_S / LEVELS[-1] / stdlib,
                "context",
                None,
                "the standard library's client, no library: what this machine allows",
            )
        )
        return rows
    finally:
        server.terminate()
        server.wait(timeout=10)


def _bare_client(url: str, texts: list[str]) -> float:
    """The same requests with the adapter's client (urllib3) and a thread pool alone."""
    import urllib3

    pool = urllib3.PoolManager(maxsize=max(10, LEVELS[-1]), retries=False)

    def one(text: str) -> list[str]:
        answer = pool.request("GET", url, fields={"q": text, "limit": "12"}).json()
        return [hit["_id"] for hit in answer["hits"]["hits"]]

    try:
        return _pooled(one, texts)
    finally:
        pool.clear()


def _bare_stdlib(port: int, texts: list[str]) -> float:
    """The same requests with http.client (one kept-alive connection per thread)."""
    import http.client
    import json
    import threading
    from urllib.parse import urlencode

    local = threading.local()

    def one(text: str) -> list[str]:
        connection = getattr(local, "connection", None)
        if connection is None:
            connection = local.connection = http.client.HTTPConnection("127.0.0.1", port)
        connection.request("GET", "/search?" + urlencode({"q": text, "limit": 12}))
        answer = json.loads(connection.getresponse().read())
        return [hit["_id"] for hit in answer["hits"]["hits"]]

    return _pooled(one, texts)


def _pooled(one: Callable[[str], list[str]], texts: list[str]) -> float:
    """Wall time of ``one`` over every text on 32 threads, after 100 warm-up calls."""
    with ThreadPoolExecutor(LEVELS[-1]) as pool:
        list(pool.map(one, texts[:100]))
        started = time.perf_counter()
        list(pool.map(one, texts))
        return time.perf_counter() - started
