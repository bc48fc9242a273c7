"""Query samples: production queries drawn from a log, frozen once, replayed night after night.

A log is a JSONL or CSV file (a text column, an optional count and timestamp) or an SQL query on
a store URL or an Airflow ``postgres`` connection (rows of text, optional count). Texts are
stripped (and case-folded when asked); equal texts merge, their counts added; a row without a
count counts once. Sampling draws ``size`` distinct queries with ``seed``: ``all``, ``random``
(uniform), ``top`` (most frequent, ties by text) or ``pps`` (probability proportional to count,
without replacement: Efraimidis & Spirakis 2006). Buckets come from the whole log: ``head`` is
the most frequent queries up to half of all traffic, ``torso`` up to 80 %, ``tail`` the rest.

Privacy: the stored text is ``redacted`` by default (emails, phone numbers, digit runs of 6 or
more and every secret the redaction policy masks), ``hashed`` (only a keyed HMAC-SHA256) or
``plain`` by explicit choice. Nothing downstream (report, log, alert, dashboard, spool) ever sees
more than the stored text, but the retriever is asked the query as it was captured: each query's
key is a hash of its normalised original (keyed by the hash key when one is set), and a replay of
a ``redacted`` or ``hashed`` sample reads the log again for the originals of its keys
(:func:`captured_texts`); one no longer there stops the replay, never asking a masked text.

Reading the log (files, SQL through a store URL) is :mod:`retrieval_eval.workflows.samples`;
this module draws from its rows.
"""

from __future__ import annotations

import hashlib
import hmac
import random
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from retrieval_eval.errors import SampleError
from retrieval_eval.replay.specs import Privacy, SampleSpec
from retrieval_eval.safety.redaction import redact, redact_personal

HEAD_SHARE, TORSO_SHARE = 0.5, 0.8

Bucket = Literal["head", "torso", "tail"]


@dataclass(frozen=True, slots=True)
class SampledQuery:
    """One query of a sample: its key, the text as stored, its count in the log, its bucket, and
    the log's own id for it when the log has one."""

    key: str
    text: str
    count: int
    bucket: Bucket
    query_id: str | None = None


@dataclass(frozen=True, slots=True)
class QuerySample:
    """A frozen sample: what a replay asks, in a fixed order, with its fingerprint."""

    name: str
    privacy: Privacy
    queries: tuple[SampledQuery, ...]
    log_queries: int  # distinct queries in the log it was drawn from
    log_traffic: int  # their summed counts

    @property
    def fingerprint(self) -> str:
        digest = hashlib.sha256(self.privacy.encode())
        for q in self.queries:
            digest.update(f"\x00{q.key}\x00{q.text}\x00{q.count}\x00{q.bucket}".encode())
            if q.query_id is not None:
                digest.update(f"\x01{q.query_id}".encode())
        return digest.hexdigest()[:16]


def draw_sample(
    name: str, spec: SampleSpec, rows: Iterable[tuple[str, int, str | None]]
) -> QuerySample:
    """Merge, bucket and draw the sample ``spec`` describes from a log's ``rows`` (text,
    count, the log's id)."""
    key = _hash_key(spec, name)
    merged = _merged(rows, spec, key)
    buckets = _buckets(merged)
    drawn = _draw(merged, spec)
    queries = tuple(
        SampledQuery(k, merged[k][0], merged[k][1], buckets[k], merged[k][2]) for k in drawn
    )
    traffic = sum(count for _, count, _ in merged.values())
    return QuerySample(name, spec.privacy, queries, len(merged), traffic)


def captured_texts(
    sample: QuerySample, spec: SampleSpec, rows: Iterable[tuple[str, int, str | None]]
) -> dict[str, str]:
    """The text each query of a ``redacted`` or ``hashed`` ``sample`` was captured with, found
    by key among a log's ``rows``.

    A key the log no longer holds (rotated, rewritten, another hash key) is a
    :class:`SampleError` naming the sample and the fix, before any query is asked: the stored
    (masked) text is never asked instead."""
    key = _hash_key(spec, sample.name)
    wanted = {q.key for q in sample.queries}
    found: dict[str, str] = {}
    for text, _count, _id in rows:
        normal = _normal(text, spec.casefold)
        if normal and (k := _key_of(normal, key)) in wanted:
            found.setdefault(k, normal)
    if len(found) < len(wanted):
        where = spec.source.path if spec.source.path is not None else f"samples.{sample.name}.query"
        raise SampleError(
            [
                f"sample {sample.name!r} ({sample.privacy}, fingerprint {sample.fingerprint}): "
                f"{len(wanted) - len(found)} of {len(wanted)} queries are no longer in its log "
                f"{where} (rotated or rewritten, another hash key, or a sample drawn before "
                "retrieval-eval asked the captured text): a replay asks the retriever the text "
                "as captured and reads it there, so nothing was replayed. Draw a new sample from "
                f"the log as it is: `retrieval-eval samples build {sample.name} --refresh` (its "
                "replays start a new series), or point 'source' at the log it was drawn from"
            ]
        )
    return found


def _hash_key(spec: SampleSpec, name: str) -> bytes | None:
    """The key the sample's query keys are HMACs under (required by ``hashed``, optional for
    ``redacted``); None: a plain SHA-256."""
    if spec.hash_key_from_env is None and spec.hash_key_connection_id is None:
        return None
    from retrieval_eval.retrievers.secrets import airflow_connection, env_secret

    where = f"samples.{name}"
    if spec.hash_key_from_env:
        return env_secret(spec.hash_key_from_env, f"{where}.hash_key_from_env").encode()
    assert spec.hash_key_connection_id is not None
    conn = airflow_connection(spec.hash_key_connection_id, f"{where}.hash_key_connection_id")
    if not conn.password:
        raise SampleError(
            [
                f"{where}: connection {spec.hash_key_connection_id!r} has no password"
                " to use as the hash key"
            ]
        )
    return str(conn.password).encode()


def _normal(text: str, casefold: bool) -> str:
    text = " ".join(text.split())
    return text.casefold() if casefold else text


def _keyed(key: bytes, text: str) -> str:
    return hmac.new(key, text.encode(), hashlib.sha256).hexdigest()[:32]


def _key_of(normal: str, key: bytes | None) -> str:
    """A query's key: a hash of its normalised original text, keyed when there is a key. Two
    queries that mask alike ("order <number>") stay two queries."""
    return (
        _keyed(key, normal) if key is not None else hashlib.sha256(normal.encode()).hexdigest()[:32]
    )


def stored_text(
    text: str, privacy: Privacy, key: bytes | None = None, *, casefold: bool = False
) -> str:
    """What a query's text becomes in the store (and so in every report). ``redacted`` masks
    secrets and personal data, ``plain`` secrets only (a key pasted into a search box is never
    wanted), both before the text is case-folded: an AWS key id or an IBAN is known by its
    capitals."""
    if privacy == "hashed":
        assert key is not None
        return "#" + _keyed(key, text.casefold() if casefold else text)[:12]
    text = redact_personal(text) if privacy == "redacted" else redact(text)
    return text.casefold() if casefold else text


def _merged(
    rows: Iterable[tuple[str, int, str | None]], spec: SampleSpec, key: bytes | None
) -> dict[str, tuple[str, int, str | None]]:
    """key -> (stored text, summed count, first id); queries that normalise alike merge."""
    merged: dict[str, tuple[str, int, str | None]] = {}
    for text, count, query_id in rows:
        normal = _normal(text, spec.casefold)
        if not normal:
            continue
        shown = stored_text(_normal(text, False), spec.privacy, key, casefold=spec.casefold)
        k = _key_of(normal, key)
        previous = merged.get(k)
        if previous is None:
            merged[k] = (shown, count, query_id)
        else:
            merged[k] = (shown, previous[1] + count, previous[2] or query_id)
    return merged


def _by_traffic(merged: dict[str, tuple[str, int, str | None]]) -> list[str]:
    return sorted(merged, key=lambda k: (-merged[k][1], merged[k][0], k))


def _buckets(merged: dict[str, tuple[str, int, str | None]]) -> dict[str, Bucket]:
    total = sum(count for _, count, _ in merged.values()) or 1
    buckets: dict[str, Bucket] = {}
    before = 0
    for k in _by_traffic(merged):
        share = before / total
        buckets[k] = "head" if share < HEAD_SHARE else "torso" if share < TORSO_SHARE else "tail"
        before += merged[k][1]
    return buckets


def _draw(merged: dict[str, tuple[str, int, str | None]], spec: SampleSpec) -> list[str]:
    ordered = _by_traffic(merged)
    size = len(ordered) if spec.size is None else min(spec.size, len(ordered))
    if spec.method == "all":
        return ordered
    if spec.method == "top":
        return ordered[:size]
    rng = random.Random(spec.seed)
    canonical = sorted(merged)  # independent of the log's row order
    if spec.method == "random":
        chosen = set(rng.sample(canonical, size))
    else:  # pps: the `size` largest keys u^(1/w)
        keys = {k: rng.random() ** (1.0 / merged[k][1]) for k in canonical}
        chosen = set(sorted(canonical, key=lambda k: -keys[k])[:size])
    return [k for k in ordered if k in chosen]
