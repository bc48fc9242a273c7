"""What the config says about replays: a sample's source and drawing, and the drift limits.

Apart from :mod:`~retrieval_eval.replay.samples` and :mod:`~retrieval_eval.replay.compare`, so that
reading a config (every DAG-file parse) builds these models without importing the replay machinery.
"""

from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Share = Annotated[float, Field(ge=0, le=1)]

Privacy = Literal["redacted", "hashed", "plain"]
Method = Literal["all", "random", "top", "pps"]


class SampleSource(BaseModel):
    """Where the queries come from: ``path`` (JSONL/CSV), or ``query`` on ``url``/``connection_id``.

    The fields name the log's columns: ``text_field`` the query (default ``text``, ``query`` or
    ``q``), ``count_field`` how often it was asked (default ``count``, ``frequency`` or ``freq``;
    none: once), ``id_field`` the log's own query id (a run file looks rankings up by it), and
    ``timestamp_field`` when it was asked, which ``since``/``until`` (a time window, ``until``
    excluded; a time without a zone is UTC) need: rows outside the window are left out.
    """

    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid", frozen=True)

    path: Path | None = None
    """A query log file (JSONL or CSV)."""
    query: str | None = None
    """An SQL query returning the log's rows (with `url` or `connection_id`)."""
    url: str | None = None
    """The database URL the SQL `query` runs on."""
    connection_id: str | None = None
    """An Airflow connection to the database the SQL `query` runs on."""
    text_field: str | None = None
    """The log's column holding the query text (default: `text`, `query` or `q`)."""
    count_field: str | None = None
    """The column saying how often the query was asked (default: `count`, `frequency` or `freq`;
    none: once)."""
    id_field: str | None = None
    """The log's own query id column (a run file looks rankings up by it)."""
    timestamp_field: str | None = None
    """The column saying when the query was asked; `since` and `until` need it."""
    timeout_s: Annotated[float, Field(gt=0, allow_inf_nan=False)] = 300.0
    """An SQL query still running after this many seconds is ended (fetching rows included)."""
    since: datetime | None = None
    """Leave out rows asked before this time (a time without a zone is UTC)."""
    until: datetime | None = None
    """Leave out rows asked at or after this time (a time without a zone is UTC)."""

    @model_validator(mode="after")
    def _one_source(self) -> "SampleSource":
        if (self.path is None) == (self.query is None):
            raise ValueError("give either 'path' (a JSONL or CSV log) or 'query' (SQL)")
        if self.query is not None and (self.url is None) == (self.connection_id is None):
            raise ValueError("an SQL 'query' needs exactly one of 'url' or 'connection_id'")
        if (self.since or self.until) and self.timestamp_field is None:
            raise ValueError(
                "'since'/'until' need 'timestamp_field': the log's column of when each query "
                "was asked"
            )
        if self.since and self.until and utc(self.since) >= utc(self.until):
            raise ValueError("'since' must be before 'until'")
        return self


def utc(moment: datetime) -> datetime:
    """``moment`` with a zone: one without is UTC."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


class SampleSpec(BaseModel):
    """A ``samples:`` entry of the config."""

    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid", frozen=True)

    source: SampleSource
    """Where the queries come from."""
    method: Method = "all"
    """How queries are drawn: `all`, `random`, `top` (the most asked) or `pps` (probability
    proportional to count)."""
    size: Annotated[int, Field(ge=1)] | None = None
    """How many queries to draw (needed by every method but `all`)."""
    seed: int = 0
    """The random seed of `random` and `pps`, so a sample draws the same queries again."""
    casefold: bool = False
    """Queries that differ only in case count as one (they are always stripped)."""
    privacy: Privacy = "redacted"
    """How captured queries are stored: `redacted` (secrets and personal data masked), `hashed` (a
    keyed hash only) or `plain`."""
    hash_key_from_env: str | None = None
    """The environment variable holding the key of the stored hashes."""
    hash_key_connection_id: str | None = None
    """An Airflow connection whose password is the key of the stored hashes."""

    @model_validator(mode="after")
    def _consistent(self) -> "SampleSpec":
        if self.method != "all" and self.size is None:
            raise ValueError(f"method {self.method!r} needs 'size' (how many queries to draw)")
        keyed = (self.hash_key_from_env is not None) + (self.hash_key_connection_id is not None)
        if self.privacy == "hashed" and keyed != 1:
            raise ValueError(
                "privacy 'hashed' needs the hash key from exactly one of 'hash_key_from_env' "
                "or 'hash_key_connection_id'"
            )
        if keyed > 1:
            raise ValueError(
                "give the hash key from 'hash_key_from_env' or 'hash_key_connection_id', not both"
            )
        return self


class DriftThresholds(BaseModel):
    """``drift:`` in the config: limits a replay must keep, each optional but the defaults."""

    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid", frozen=True)

    min_mean_rbo: Share | None = 0.8
    """The lowest allowed mean RBO between the two replays' rankings; null: not checked."""
    max_top1_changed: Share | None = 0.2
    """The largest allowed share of queries whose top-1 document changed; null: not checked."""
    min_weighted_mean_rbo: Share | None = None
    """The lowest allowed mean RBO weighted by each query's count in the log; null: not checked."""
    max_weighted_top1_changed: Share | None = None
    """The largest allowed top-1 change weighted by count; null: not checked."""
    max_error_rate: Share = 0.0
    """The share of queries that may fail before the replay is invalid."""
