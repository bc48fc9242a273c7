"""The http adapter bounds every call in time and memory against a real misbehaving server:
a body (or headers) trickled a byte a second is cut off at the call's total deadline, and an
answer over ``max_response_bytes`` is refused without being held in memory."""

from __future__ import annotations

import time
import tracemalloc

import pytest
from servers.hostile_server import HostileServer

from retrieval_eval.retrievers.http import HttpOptions, HttpRetrievalError, HttpRetriever


def adapter(url: str, **options: object) -> HttpRetriever:
    opts = HttpOptions.model_validate({"url": url, "ids": "hits.hits[*]._id", **options})
    return HttpRetriever("hostile", opts)


@pytest.mark.parametrize("mode", ["trickle", "trickle-headers"])
def test_a_trickling_answer_is_cut_off_at_the_call_deadline(mode: str) -> None:
    with HostileServer() as server:
        retriever = adapter(f"{server.url}/{mode}", timeout_s=1, retries=1, backoff_s=0.2)
        started = time.monotonic()
        with pytest.raises(HttpRetrievalError, match=r"deadline of 2\.2 s"):
            retriever.retrieve("q", 3)
        took = time.monotonic() - started
        retriever.close()
    assert took < 4, f"the call took {took:.1f} s"  # the body alone would take about 12 s


def test_an_answer_over_the_cap_is_refused_naming_the_cap_and_the_option() -> None:
    with HostileServer(size=40 * 2**20) as server:
        retriever = adapter(f"{server.url}/huge", timeout_s=10, retries=0)
        tracemalloc.start()
        try:
            with pytest.raises(HttpRetrievalError, match=r"larger than 16,777,216 bytes"):
                retriever.retrieve("q", 3)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
            retriever.close()
    assert peak < 40 * 2**20, f"peak {peak / 2**20:.0f} MiB"  # never the 40 MiB answer


def test_a_1_gib_answer_is_not_read_past_the_cap() -> None:
    """The issue's case: the server offers 1 GiB; the adapter stops reading at the cap, so what
    the server got out is the cap and the socket buffers, and the call ends in seconds."""
    with HostileServer(size=2**30) as server:
        retriever = adapter(f"{server.url}/huge", timeout_s=30, retries=0)
        started = time.monotonic()
        with pytest.raises(HttpRetrievalError, match=r"larger than 16,777,216 bytes"):
            retriever.retrieve("q", 3)
        took = time.monotonic() - started
        retriever.close()
    assert server.written < 64 * 2**20, f"{server.written / 2**20:.0f} MiB sent"
    assert took < 10, f"the call took {took:.1f} s"


def test_the_cap_is_an_option() -> None:
    with HostileServer(size=2 * 2**20) as server:
        small = adapter(f"{server.url}/huge", max_response_bytes=2**20, retries=0)
        with pytest.raises(HttpRetrievalError, match=r"max_response_bytes"):
            small.retrieve("q", 3)
        small.close()
        fine = adapter(f"{server.url}/ok")
        assert fine.retrieve("q", 3) == ["d1"]
        fine.close()
