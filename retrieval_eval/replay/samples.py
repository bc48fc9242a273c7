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
(:func:`resolve_texts`); one no longer there stops the replay, never asking a masked text.
"""

from __future__ import annotations

import hashlib
import hmac
import random
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
)
from pydantic_core import PydanticCustomError

from retrieval_eval.errors import SampleError, SourceUnavailableError
from retrieval_eval.replay.specs import Privacy, SampleSource, SampleSpec, utc
from retrieval_eval.safety.redaction import redact, redact_personal
from retrieval_eval.safety.surrogates import NUL_PROBLEM, lone_surrogate
from retrieval_eval.store.names import MAX_COUNT

if TYPE_CHECKING:
    from sqlalchemy.engine import URL

MAX_QUERY_CHARS = 4_000
MAX_PROBLEMS = 20
TEXT_FIELDS = ("text", "query", "q")
COUNT_FIELDS = ("count", "frequency", "freq")
HEAD_SHARE, TORSO_SHARE = 0.5, 0.8

Bucket = Literal["head", "torso", "tail"]


def _no_nul(text: str) -> str:
    if "\x00" in text:
        raise PydanticCustomError("nul_character", f"{NUL_PROBLEM} from the log")
    return text


def _storable_count(count: int) -> int:
    if count > MAX_COUNT:
        raise PydanticCustomError(
            "count_too_large",
            f"{count} is more than the result store keeps ({MAX_COUNT}): a count is how many "
            "times the query was asked",
        )
    return count


class _Row(BaseModel):
    model_config = ConfigDict(extra="ignore")

    text: Annotated[str, Field(max_length=MAX_QUERY_CHARS), AfterValidator(_no_nul)]
    id: Annotated[str, Field(min_length=1, max_length=255), AfterValidator(_no_nul)] | None = None
    count: Annotated[int, Field(ge=1), AfterValidator(_storable_count)] = 1
    timestamp: datetime | None = None


_ROWS = TypeAdapter(list[_Row])


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


def build_sample(name: str, spec: SampleSpec, base_dir: Path | None = None) -> QuerySample:
    """Read the log, merge, bucket and draw the sample ``spec`` describes."""
    key = _hash_key(spec, name)
    merged = _merged(read_log(spec.source, base_dir, where=f"samples.{name}"), spec, key)
    buckets = _buckets(merged)
    drawn = _draw(merged, spec)
    queries = tuple(
        SampledQuery(k, merged[k][0], merged[k][1], buckets[k], merged[k][2]) for k in drawn
    )
    traffic = sum(count for _, count, _ in merged.values())
    if traffic > MAX_COUNT:  # a merged query's count is at most this too
        raise SampleError(
            [
                f"samples.{name}: the counts of its log add up to {traffic}, more than the result "
                f"store keeps ({MAX_COUNT}); draw it from a shorter span of the log"
            ]
        )
    return QuerySample(name, spec.privacy, queries, len(merged), traffic)


def resolve_texts(
    sample: QuerySample, spec: SampleSpec, base_dir: Path | None = None
) -> dict[str, str]:
    """The text each query of ``sample`` is asked with: the query as captured. A ``plain``
    sample stores it; a ``redacted`` or ``hashed`` one reads it from the log again, by key.

    A key the log no longer holds (rotated, rewritten, another hash key) is a
    :class:`SampleError` naming the sample and the fix, before any query is asked: the stored
    (masked) text is never asked instead."""
    if sample.privacy == "plain":
        return {q.key: q.text for q in sample.queries}
    key = _hash_key(spec, sample.name)
    wanted = {q.key for q in sample.queries}
    found: dict[str, str] = {}
    for text, _count, _id in read_log(spec.source, base_dir, where=f"samples.{sample.name}"):
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


def read_log(
    source: SampleSource, base_dir: Path | None = None, *, where: str = "samples"
) -> list[tuple[str, int, str | None]]:
    """(text, count, the log's id or None) for every row of the log; bad rows are a :class:`SampleError` naming
    the file and line of each (at most :data:`MAX_PROBLEMS` listed)."""
    if source.path is not None:
        path = (
            source.path if base_dir is None or source.path.is_absolute() else base_dir / source.path
        )
        raw, lines = _read_file(path, source)
        label = str(path)
    else:
        raw, lines = _read_sql(source, where)
        label = f"{where}.query"
    try:
        rows = _ROWS.validate_python(raw)
    except ValidationError as exc:
        from retrieval_eval.safety.records import row_errors

        problems = [
            f"{label}: line {line}: {field}: {msg}"
            for line, field, msg in row_errors(exc, lines, MAX_PROBLEMS)
        ]
        raise SampleError(problems) from None
    problems = [
        f"{label}: line {lines[i]}: the text is not Unicode (a lone surrogate)"
        for i, row in enumerate(rows)
        if lone_surrogate(row.text)
    ]
    if source.since is not None or source.until is not None:
        problems += [
            f"{label}: line {lines[i]}: no time in {source.timestamp_field!r}, which the "
            "sample's 'since'/'until' window needs; give every row one, or drop the window"
            for i, row in enumerate(rows)
            if row.timestamp is None
        ]
    if problems:
        raise SampleError(problems[:MAX_PROBLEMS])
    return [(row.text, row.count, row.id) for row in rows if _in_window(row.timestamp, source)]


def _in_window(moment: datetime | None, source: SampleSource) -> bool:
    if moment is None:
        return True  # no window (a row without a time in a window is a problem above)
    moment = utc(moment)
    return (source.since is None or moment >= utc(source.since)) and (
        source.until is None or moment < utc(source.until)
    )


def _read_file(path: Path, source: SampleSource) -> tuple[list[dict[str, Any]], list[int]]:
    from retrieval_eval.safety.records import read_records

    records, lines = read_records(path, "query log", SampleError)
    return _mapped(path, records, lines, source), lines


def _mapped(
    label: Path | str, records: list[Any], lines: list[int], source: SampleSource
) -> list[dict[str, Any]]:
    """Each record as {text, count, timestamp} by the source's field names."""
    out: list[dict[str, Any]] = []
    problems: list[str] = []
    for record, line in zip(records, lines, strict=True):
        if not isinstance(record, dict):
            problems.append(f"{label}: line {line}: expected an object with a query text")
            continue
        text_field = source.text_field or next((f for f in TEXT_FIELDS if f in record), None)
        if text_field is None or text_field not in record:
            wanted = source.text_field or " or ".join(repr(f) for f in TEXT_FIELDS)
            problems.append(
                f"{label}: line {line}: no query text (field {wanted}); "
                "set 'text_field' to the column that holds it"
            )
            continue
        row = {"text": record[text_field]}
        count_field = source.count_field or next((f for f in COUNT_FIELDS if f in record), None)
        if count_field is not None and count_field in record:
            row["count"] = record[count_field]
        if source.id_field is not None and record.get(source.id_field) is not None:
            row["id"] = str(record[source.id_field])
        if source.timestamp_field and source.timestamp_field in record:
            row["timestamp"] = record[source.timestamp_field]
        out.append(row)
    if problems:
        raise SampleError(problems[:MAX_PROBLEMS])
    return out


def _read_sql(source: SampleSource, where: str) -> tuple[list[dict[str, Any]], list[int]]:
    from sqlalchemy import text as sql_text

    from retrieval_eval.store.engine import make_engine
    from retrieval_eval.store.url import parse_store_url

    url_text = source.url if source.url is not None else _connection_url(source, where)
    url = parse_store_url(url_text, source=f"{where}.url")
    engine = make_engine(url, statement_timeout_s=source.timeout_s)
    try:
        with _sql_errors(url, source, where, connecting=True):
            connection = engine.connect()
        with connection, _sql_errors(url, source, where, connecting=False):
            result = connection.execute(sql_text(source.query or ""))
            columns = list(result.keys())
            records = [dict(zip(columns, row, strict=True)) for row in result]
    finally:
        engine.dispose()
    if records and source.text_field is None and not any(f in records[0] for f in TEXT_FIELDS):
        # unnamed columns: the first is the text, the second (if any) the count
        first = columns[0]
        second = columns[1] if len(columns) > 1 else None
        records = [{"text": r[first], **({"count": r[second]} if second else {})} for r in records]
    lines = list(range(1, len(records) + 1))
    return _mapped(f"{where}.query row", records, lines, source), lines


@contextmanager
def _sql_errors(url: URL, source: SampleSource, where: str, *, connecting: bool) -> Iterator[None]:
    """A sample's SQL source failing: unreachable, disconnected or past ``timeout_s`` is
    :class:`SourceUnavailableError` (exit 3); a query the database refuses (a syntax error, an
    unknown table) is :class:`SampleError` (exit 2) naming ``{where}.query`` and the database's
    reason. The driver's exception is not chained: it could carry the password."""
    from sqlalchemy.exc import DBAPIError

    from retrieval_eval.store.engine import reason, statement_timed_out
    from retrieval_eval.store.url import mask_url

    try:
        yield
    except DBAPIError as exc:
        why = reason(exc, url)
        database = f"the query log's database at {mask_url(url)}"
        if connecting or exc.connection_invalidated:
            lost = "cannot reach" if connecting else "lost the connection to"
            raise SourceUnavailableError(f"{where}: {lost} {database}: {why}") from None
        if statement_timed_out(exc):
            raise SourceUnavailableError(
                f"{where}.query: still running on {database} after {source.timeout_s:g} s, so it "
                f"was ended ({why}); make the query faster, or raise {where}.source.timeout_s"
            ) from None
        raise SampleError([f"{where}.query: {database} refused it: {why}; fix the SQL"]) from None


def _connection_url(source: SampleSource, where: str) -> str:
    from sqlalchemy.engine import URL

    from retrieval_eval.retrievers.secrets import airflow_connection

    assert source.connection_id is not None
    conn = airflow_connection(source.connection_id, f"{where}.connection_id")
    url = URL.create(
        "postgresql+psycopg",
        username=conn.login or None,
        password=conn.password or None,
        host=conn.host or None,
        port=conn.port or None,
        database=conn.schema or None,
    )
    return url.render_as_string(hide_password=False)


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
