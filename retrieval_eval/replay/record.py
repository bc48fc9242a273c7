"""One replay, as one model: what was replayed (the sample as stored), the rankings, what they
are compared with and where it went (saved, spooled, neither). Its JSON is the spool file and
the XCom payload; the comparison, the sample and the rankings joined with it are views over it,
computed when asked, never copies kept beside it.

The JSON keeps the spool file's first layout (``version`` 1: the sample's fields flat, rankings
packed as ``[key, ids, error]``: no query text twice), so files spooled before this model was
the one replay still flush; version 1's ``against`` (``"retriever NAME"``) reads as
``against_retriever``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, Field, PrivateAttr, model_validator

from retrieval_eval.replay.compare import Comparison, Ranked, compare
from retrieval_eval.replay.samples import QuerySample, SampledQuery
from retrieval_eval.replay.specs import DriftThresholds, Privacy
from retrieval_eval.safety.collector import paused_gc

RECORD_VERSION = 2
AGAINST = "retriever "  # how a replay names the other retriever it was compared with

# one query of a sample as kept: key, stored text, count, bucket, the log's id
PackedQuery = tuple[str, str, int, Literal["head", "torso", "tail"], str | None]


class Ranking(NamedTuple):
    """One query's ranking as it travels (XCom, spool): its key, top-k distinct ids, error.

    The ids are a tuple, as a :class:`Ranked`'s: packing a replay, joining it with its sample
    and comparing it share them instead of copying 100,000s of lists."""

    key: str
    ids: tuple[str, ...]
    error: str | None = None


@paused_gc()  # bulk allocation only: no user code runs in here
def packed(rankings: Sequence[Ranked]) -> list[Ranking]:
    """Rankings as they travel: keys and ids (shared, not copied), no query text."""
    return [Ranking(r.key, r.ids, r.error) for r in rankings]


CompareWith = Literal["previous", "replay", "retriever"]


class ReplayRecord(BaseModel):
    """A replay: the one shape the workflow's steps, the store, the spool, the reports and the
    alerts read.

    ``compare_with`` says what its rankings are compared with: ``previous`` (the valid replay
    of its series before it, found when it is saved), ``replay`` (the stored replay
    ``compared_id``, by request) or ``retriever`` (``before``: ``against_retriever``'s rankings,
    replayed at the same time and saved as that retriever's own replay). ``before`` holds the
    rankings compared with once they are known; ``compared_id`` and ``compared_index_version``
    name the stored replay they came from."""

    kind: Literal["replay"] = "replay"
    version: int = RECORD_VERSION
    run_key: str
    started_at: datetime  # when it was replayed: its run_date once saved
    sample_name: str
    privacy: Privacy
    log_queries: int
    log_traffic: int
    queries: list[PackedQuery]
    retriever: str
    k: int
    p: float
    thresholds: DriftThresholds = Field(default_factory=DriftThresholds)
    rankings: list[Ranking]
    compare_with: CompareWith = "previous"
    compared_id: int | None = None
    against_retriever: str | None = None
    before: list[Ranking] | None = None
    compared_index_version: str | None = None
    index_version: str | None = None
    package_version: str | None = None
    # the store it is meant for: masked URL and a fingerprint of the full one (spool files)
    store: str | None = None
    store_fingerprint: str | None = None
    # where it went: the stored ids, else the spool file and why the store did not take it
    # (exit code 3, or 2 for a store a newer retrieval-eval migrated)
    sample_id: int | None = None
    replay_id: int | None = None
    spool_path: Path | None = None
    notes: list[str] = Field(default_factory=list)
    problem: str | None = None
    problem_exit_code: int = 3

    _sample: QuerySample | None = PrivateAttr(default=None)
    _comparison: Comparison | None = PrivateAttr(default=None)

    @model_validator(mode="before")
    @classmethod
    def _first_layout(cls, data: Any) -> Any:
        """A version 1 spool file: ``against`` named the other retriever as ``"retriever X"``."""
        if isinstance(data, dict) and data.get("version", 1) < RECORD_VERSION:
            data = dict(data)
            label = data.pop("against", None)
            if data.get("compare_with") == "retriever" and label:
                data["against_retriever"] = str(label).removeprefix(AGAINST)
        return data

    @classmethod
    @paused_gc()  # bulk allocation only: no user code runs in here
    def of_sample(cls, sample: QuerySample, **fields: Any) -> ReplayRecord:
        """A record of ``sample`` (its fields packed), the rest from ``fields``: values this
        process made, so not validated again (a replay's rankings are 100,000s of tuples);
        JSON that crosses a process (an XCom, a spool file) is validated where it is read."""
        record = cls.model_construct(
            sample_name=sample.name,
            privacy=sample.privacy,
            log_queries=sample.log_queries,
            log_traffic=sample.log_traffic,
            queries=[(q.key, q.text, q.count, q.bucket, q.query_id) for q in sample.queries],
            **fields,
        )
        record._sample = sample
        return record

    def but(self, **changes: Any) -> ReplayRecord:
        """A copy with ``changes``; the comparison is computed again when what it reads changed."""
        copy = self.model_copy(update=changes)
        if changes.keys() & {"rankings", "before", "p", "k", "thresholds", "compare_with"}:
            copy._comparison = None
        if changes.keys() & {"queries", "sample_name", "privacy"}:
            copy._sample = None
        return copy

    @property
    def sample(self) -> QuerySample:
        """The sample replayed, as stored."""
        if self._sample is None:
            queries = tuple(SampledQuery(*q) for q in self.queries)
            self._sample = QuerySample(
                self.sample_name, self.privacy, queries, self.log_queries, self.log_traffic
            )
        return self._sample

    @property
    def run_date(self) -> datetime:
        return self.started_at

    @paused_gc()
    def ranked(self, rankings: Sequence[Ranking]) -> list[Ranked]:
        """``rankings`` joined with the sample's stored texts, counts and buckets by key: pandas
        finds each key's query (a replay keeps the sample's order, so that is a plain zip
        unless the keys say otherwise); the ids are shared, not copied."""
        import numpy as np
        import pandas as pd

        if not rankings:
            return []
        if not self.queries:
            raise KeyError(rankings[0].key)
        keys, texts, counts, buckets, _ = zip(*self.queries, strict=True)
        wanted, ids, errors = zip(*rankings, strict=True)
        if wanted != keys:
            at = pd.Index(keys).get_indexer(wanted)
            if (at < 0).any():
                raise KeyError(wanted[int(np.argmin(at))])
            texts, counts, buckets = (
                np.asarray(column, dtype=object)[at].tolist() for column in (texts, counts, buckets)
            )
        return list(map(Ranked, wanted, texts, counts, buckets, map(tuple, ids), errors))

    @property
    def comparison(self) -> Comparison:
        """Its rankings compared with ``before`` (nothing yet: the ``first`` of a series) at
        its p and k, judged by its thresholds. Only its own rankings are joined with the
        sample: of the rankings before, the comparison reads keys, ids and errors alone."""
        if self._comparison is None:
            self._comparison = compare(
                self.before,
                self.ranked(self.rankings),
                p=self.p,
                k=self.k,
                thresholds=self.thresholds,
            )
        return self._comparison

    @property
    def against(self) -> str | None:
        """What it was compared with, in words (``retriever X``, ``replay N``), or None."""
        if self.compare_with == "retriever" and self.against_retriever:
            return f"{AGAINST}{self.against_retriever}"
        if self.before is not None and self.compared_id is not None:
            return f"replay {self.compared_id}"
        return None

    @property
    def file_name(self) -> str:
        """Its spool file's name."""
        return f"replay-{self.run_key}.json"
