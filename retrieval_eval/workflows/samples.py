"""Reading a query log (a JSONL or CSV file, or an SQL query on a store URL or an Airflow
``postgres`` connection) for the samples of :mod:`retrieval_eval.replay.samples`: what ``samples
build`` and a replay of a ``redacted`` or ``hashed`` sample do before the domain draws the sample
or finds the texts as captured. Bad rows are a :class:`SampleError` naming file and line; a
database that cannot be reached is :class:`SourceUnavailableError` (exit 3), never with its
password.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter, ValidationError
from pydantic_core import PydanticCustomError

from retrieval_eval.errors import SampleError, SourceUnavailableError
from retrieval_eval.replay.samples import QuerySample, captured_texts, draw_sample
from retrieval_eval.replay.specs import SampleSource, SampleSpec, utc
from retrieval_eval.safety.surrogates import NUL_PROBLEM, lone_surrogate
from retrieval_eval.store.names import MAX_COUNT

if TYPE_CHECKING:
    from sqlalchemy.engine import URL

    from retrieval_eval.config.models import Config
    from retrieval_eval.store import Store

MAX_QUERY_CHARS = 4_000
MAX_PROBLEMS = 20
TEXT_FIELDS = ("text", "query", "q")
COUNT_FIELDS = ("count", "frequency", "freq")


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


def stored_sample(
    config: Config, store: Store | None, name: str, *, refresh: bool = False
) -> tuple[int | None, QuerySample, SampleSpec]:
    """The newest stored sample ``name`` (built from its log and stored when there is none, or
    with ``refresh``); without a store, built anew."""
    spec = config.sample_spec(name)
    if store is not None and not refresh:
        found = store.replays.latest_sample(name)
        if found is not None:
            return found[0], found[1], spec
    sample = build_sample(name, spec, config.base_dir)
    sample_id = store.replays.save_sample(sample) if store is not None else None
    return sample_id, sample, spec


def build_sample(name: str, spec: SampleSpec, base_dir: Path | None = None) -> QuerySample:
    """Read the log and draw the sample ``spec`` describes; a log whose counts add up to more
    than the result store keeps is refused."""
    sample = draw_sample(name, spec, read_log(spec.source, base_dir, where=f"samples.{name}"))
    if sample.log_traffic > MAX_COUNT:  # a merged query's count is at most this too
        raise SampleError(
            [
                f"samples.{name}: the counts of its log add up to {sample.log_traffic}, more than "
                f"the result store keeps ({MAX_COUNT}); draw it from a shorter span of the log"
            ]
        )
    return sample


def resolve_texts(
    sample: QuerySample, spec: SampleSpec, base_dir: Path | None = None
) -> dict[str, str]:
    """The text each query of ``sample`` is asked with: the query as captured. A ``plain``
    sample stores it; a ``redacted`` or ``hashed`` one reads it from the log again, by key
    (:func:`~retrieval_eval.replay.samples.captured_texts`)."""
    if sample.privacy == "plain":
        return {q.key: q.text for q in sample.queries}
    rows = read_log(spec.source, base_dir, where=f"samples.{sample.name}")
    return captured_texts(sample, spec, rows)


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
