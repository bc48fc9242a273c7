"""Query samples: logs read with line-numbered errors, merged, bucketed, drawn reproducibly,
and stored only in the form the privacy setting allows."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from pydantic import ValidationError

from retrieval_eval.errors import SampleError, SourceUnavailableError
from retrieval_eval.replay.specs import SampleSource, SampleSpec
from retrieval_eval.workflows.samples import build_sample, read_log, resolve_texts


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def spec(path: Path, **kw) -> SampleSpec:
    return SampleSpec(source=SampleSource(path=path), **kw)


def test_duplicates_merge_with_their_counts_after_normalisation(tmp_path: Path) -> None:
    log = write_jsonl(
        tmp_path / "log.jsonl",
        [
            {"query": "  Refund   policy "},
            {"query": "refund policy", "count": 3},
            {"query": "Refund policy", "count": 2},
            {"query": "vpn setup"},
        ],
    )
    plain = build_sample("s", spec(log, privacy="plain"))
    assert {q.text: q.count for q in plain.queries} == {
        "Refund policy": 3,
        "refund policy": 3,
        "vpn setup": 1,
    }
    folded = build_sample("s", spec(log, privacy="plain", casefold=True))
    assert {q.text: q.count for q in folded.queries} == {"refund policy": 6, "vpn setup": 1}
    assert folded.log_traffic == 7 and folded.log_queries == 2


def test_csv_logs_with_a_frequency_column(tmp_path: Path) -> None:
    log = tmp_path / "log.csv"
    log.write_text("text,frequency,ts\nhow do I reset my password,10,2026-11-30T10:00:00\nvpn,2,\n")
    sample = build_sample("s", spec(log, privacy="plain"))
    assert [(q.text, q.count) for q in sample.queries] == [
        ("how do I reset my password", 10),
        ("vpn", 2),
    ]


def test_bad_rows_are_named_by_file_and_line(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text('{"query": "ok"}\n\n{"query": "x", "count": 0}\n{"query": 5}\nnot json\n')
    with pytest.raises(SampleError) as raised:
        read_log(SampleSource(path=log))
    assert raised.value.problems == [f"{log}: line 5: invalid JSON: unexpected character"] or any(
        "line 5" in p for p in raised.value.problems
    )
    log.write_text('{"query": "ok"}\n\n{"query": "x", "count": 0}\n{"query": 5}\n{"other": 1}\n')
    with pytest.raises(SampleError) as raised:
        read_log(SampleSource(path=log))
    problems = raised.value.problems
    assert any("line 5" in p and "text_field" in p for p in problems), problems
    log.write_text('{"query": "ok"}\n\n{"query": "x", "count": 0}\n{"query": 5}\n')
    with pytest.raises(SampleError) as raised:
        read_log(SampleSource(path=log))
    problems = raised.value.problems
    assert any(p.startswith(f"{log}: line 3: count:") for p in problems), problems
    assert any(p.startswith(f"{log}: line 4: text:") for p in problems), problems


def test_a_log_that_is_not_jsonl_or_csv_or_missing_is_named(tmp_path: Path) -> None:
    with pytest.raises(SampleError, match="cannot read the query log"):
        read_log(SampleSource(path=tmp_path / "nope.jsonl"))
    other = tmp_path / "log.txt"
    other.write_text("x\n")
    with pytest.raises(SampleError, match=r"\.jsonl or \.csv"):
        read_log(SampleSource(path=other))


def test_a_spec_says_what_it_lacks() -> None:
    with pytest.raises(ValidationError, match="needs 'size'"):
        SampleSpec(source=SampleSource(path=Path("x.jsonl")), method="top")
    with pytest.raises(ValidationError, match="exactly one of 'hash_key_from_env'"):
        SampleSpec(source=SampleSource(path=Path("x.jsonl")), privacy="hashed")
    with pytest.raises(ValidationError, match="either 'path'"):
        SampleSource()
    with pytest.raises(ValidationError, match="exactly one of 'url' or 'connection_id'"):
        SampleSource(query="select 1")


def traffic(tmp_path: Path) -> Path:
    rows = [{"query": f"query {i}", "count": 1000 // (i + 1)} for i in range(200)]
    return write_jsonl(tmp_path / "traffic.jsonl", rows)


def test_top_n_takes_the_most_frequent_and_buckets_follow_the_whole_log(tmp_path: Path) -> None:
    sample = build_sample("s", spec(traffic(tmp_path), privacy="plain", method="top", size=5))
    assert [q.text for q in sample.queries] == [f"query {i}" for i in range(5)]
    everything = build_sample("s", spec(traffic(tmp_path), privacy="plain"))
    buckets = Counter(q.bucket for q in everything.queries)
    assert set(buckets) == {"head", "torso", "tail"}
    assert everything.queries[0].bucket == "head" and everything.queries[-1].bucket == "tail"
    # head: the most frequent queries until half of all traffic
    head = [q for q in everything.queries if q.bucket == "head"]
    assert sum(q.count for q in head[:-1]) < everything.log_traffic / 2


@pytest.mark.parametrize("method", ["random", "pps"])
def test_a_seeded_draw_is_the_same_every_night_whatever_the_row_order(
    tmp_path: Path, method: str
) -> None:
    log = traffic(tmp_path)
    first = build_sample("s", spec(log, privacy="plain", method=method, size=20, seed=7))
    rows = log.read_text().splitlines()
    shuffled = write_jsonl(tmp_path / "shuffled.jsonl", [json.loads(r) for r in reversed(rows)])
    again = build_sample("s", spec(shuffled, privacy="plain", method=method, size=20, seed=7))
    other = build_sample("s", spec(log, privacy="plain", method=method, size=20, seed=8))
    assert len(first.queries) == 20
    assert first.queries == again.queries and first.fingerprint == again.fingerprint
    assert first.queries != other.queries and first.fingerprint != other.fingerprint


def test_pps_favours_frequent_queries(tmp_path: Path) -> None:
    log = traffic(tmp_path)
    picks: Counter[str] = Counter()
    for seed in range(60):
        for q in build_sample(
            "s", spec(log, privacy="plain", method="pps", size=10, seed=seed)
        ).queries:
            picks[q.bucket] += 1
    uniform: Counter[str] = Counter()
    for seed in range(60):
        for q in build_sample(
            "s", spec(log, privacy="plain", method="random", size=10, seed=seed)
        ).queries:
            uniform[q.bucket] += 1
    assert picks["head"] > 3 * uniform["head"]


def test_redacted_by_default_masks_personal_data(tmp_path: Path) -> None:
    log = write_jsonl(
        tmp_path / "log.jsonl",
        [
            {"query": "refund for jane.doe@example.com order 123456789"},
            {"query": "call me on +44 20 7946 0958"},
            {"query": "vpn setup"},
        ],
    )
    texts = {q.text for q in build_sample("s", spec(log)).queries}
    assert texts == {"refund for <email> order <number>", "call me on <phone>", "vpn setup"}
    assert "jane" not in repr(build_sample("s", spec(log)))


def test_hashed_stores_only_a_keyed_hash_and_the_replay_reads_the_log_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = write_jsonl(tmp_path / "log.jsonl", [{"query": "my secret question"}, {"query": "vpn"}])
    monkeypatch.setenv("SAMPLE_KEY", "k" * 32)
    hashed = spec(log, privacy="hashed", hash_key_from_env="SAMPLE_KEY")
    sample = build_sample("s", hashed)
    assert all(q.text.startswith("#") and "secret" not in q.text for q in sample.queries)
    assert sorted(resolve_texts(sample, hashed).values()) == ["my secret question", "vpn"]
    monkeypatch.setenv("SAMPLE_KEY", "another key of some length")
    assert build_sample("s", hashed).fingerprint != sample.fingerprint
    monkeypatch.delenv("SAMPLE_KEY")
    with pytest.raises(Exception, match="SAMPLE_KEY is not set"):
        build_sample("s", hashed)


def test_an_sql_source_on_a_store_url(tmp_path: Path) -> None:
    import sqlite3

    db = tmp_path / "logs.sqlite"
    with sqlite3.connect(db) as connection:
        connection.execute("create table search_log (q text)")
        connection.executemany(
            "insert into search_log values (?)", [("refund",), ("refund",), ("vpn",)]
        )
    source = SampleSource(
        url=f"sqlite:///{db}",
        query="select q as query, count(*) as count from search_log group by q",
    )
    sample = build_sample("s", SampleSpec(source=source, privacy="plain"))
    assert [(q.text, q.count) for q in sample.queries] == [("refund", 2), ("vpn", 1)]


@pytest.mark.postgres
def test_an_sql_source_on_postgresql(pg_url: str) -> None:
    import psycopg

    with psycopg.connect(pg_url.replace("postgresql+psycopg", "postgresql")) as connection:
        connection.execute("drop table if exists replay_test_log")
        connection.execute("create table replay_test_log (text text, hits int)")
        connection.execute("insert into replay_test_log values ('refund', 4), ('vpn', 1)")
    source = SampleSource(
        url=pg_url, query="select text, hits as count from replay_test_log order by text"
    )
    sample = build_sample("s", SampleSpec(source=source, privacy="plain"))
    assert [(q.text, q.count) for q in sample.queries] == [("refund", 4), ("vpn", 1)]


def test_counts_the_store_cannot_keep_are_bad_input_naming_the_line(tmp_path: Path) -> None:
    log = write_jsonl(
        tmp_path / "log.jsonl",
        [{"query": "ok", "count": 2**31 - 1}, {"query": "huge", "count": 2**63}],
    )
    with pytest.raises(SampleError) as raised:
        read_log(SampleSource(path=log))
    (problem,) = raised.value.problems
    assert problem.startswith(f"{log}: line 2: count:"), problem
    assert f"{2**63} is more than the result store keeps ({2**31 - 1})" in problem
    # each count fits, their sum does not: the log's traffic and a merged query's count
    write_jsonl(log, [{"query": "a", "count": 2**31 - 1}, {"query": "A", "count": 1}])
    assert read_log(SampleSource(path=log))  # the rows themselves are fine
    with pytest.raises(SampleError) as raised:
        build_sample("s", spec(log, casefold=True))
    (problem,) = raised.value.problems
    assert problem.startswith(f"samples.s: the counts of its log add up to {2**31}"), problem
    assert "draw it from a shorter span of the log" in problem


def test_a_nul_character_in_a_query_or_id_is_bad_input_naming_the_line(tmp_path: Path) -> None:
    log = write_jsonl(
        tmp_path / "log.jsonl",
        [{"query": "fine", "id": "q1"}, {"query": "a\u0000b"}, {"query": "ok", "id": "q\u00003"}],
    )
    with pytest.raises(SampleError) as raised:
        read_log(SampleSource(path=log, id_field="id"))
    text, query_id = raised.value.problems
    assert text.startswith(f"{log}: line 2: text:") and "NUL character" in text, text
    assert query_id.startswith(f"{log}: line 3: id:") and "remove it from the log" in query_id


def _sqlite_log(tmp_path: Path) -> str:
    import sqlite3

    db = tmp_path / "logs.sqlite"
    with sqlite3.connect(db) as connection:
        connection.execute("create table search_log (q text)")
        connection.execute("insert into search_log values ('refund')")
    return f"sqlite:///{db}"


def test_sql_the_source_refuses_is_bad_input_naming_the_query(tmp_path: Path) -> None:
    url = _sqlite_log(tmp_path)
    source = SampleSource(url=url, query="selec q from search_log")
    with pytest.raises(SampleError) as raised:
        read_log(source, where="samples.s")
    (problem,) = raised.value.problems
    assert problem.startswith("samples.s.query: the query log's database at sqlite:///"), problem
    assert 'near "selec": syntax error; fix the SQL' in problem
    assert "result store" not in problem
    missing = SampleSource(url=url, query="select q from no_such_table")
    with pytest.raises(SampleError, match="no such table: no_such_table; fix the SQL"):
        read_log(missing, where="samples.s")


def test_a_sqlite_query_past_its_timeout_is_ended(tmp_path: Path) -> None:
    endless = (
        "with recursive c(x) as (select 1 union all select x + 1 from c) "
        "select count(*) as query from c"
    )
    source = SampleSource(url=_sqlite_log(tmp_path), query=endless, timeout_s=0.2)
    with pytest.raises(SourceUnavailableError) as raised:
        read_log(source, where="samples.s")
    assert raised.value.exit_code == 3
    assert "samples.s.query: still running on the query log's database" in str(raised.value)
    assert "after 0.2 s" in str(raised.value) and "samples.s.source.timeout_s" in str(raised.value)


@pytest.mark.postgres
def test_a_postgresql_query_past_its_timeout_is_ended(pg_url: str) -> None:
    source = SampleSource(url=pg_url, query="select pg_sleep(600)::text as query", timeout_s=0.5)
    with pytest.raises(SourceUnavailableError) as raised:
        read_log(source, where="samples.s")
    message = str(raised.value)
    assert "samples.s.query: still running on the query log's database" in message
    assert "canceling statement due to statement timeout" in message


@pytest.mark.postgres
def test_a_postgresql_syntax_error_is_bad_input(pg_url: str) -> None:
    source = SampleSource(url=pg_url, query="select text from")
    with pytest.raises(SampleError) as raised:
        read_log(source, where="samples.s")
    (problem,) = raised.value.problems
    assert problem.startswith("samples.s.query: the query log's database at postgresql")
    assert "syntax error at end of input; fix the SQL" in problem


def test_an_unreachable_sql_source_is_exit_3_naming_it() -> None:
    source = SampleSource(url="postgresql://u:Pw-s3cret@127.0.0.1:1/logs", query="select 1")
    with pytest.raises(SourceUnavailableError) as raised:
        read_log(source, where="samples.s")
    message = str(raised.value)
    assert message.startswith("samples.s: cannot reach the query log's database at ")
    assert "u:***@127.0.0.1:1/logs" in message and "Pw-s3cret" not in message


def test_a_time_window_keeps_the_rows_asked_in_it(tmp_path: Path) -> None:
    log = write_jsonl(
        tmp_path / "log.jsonl",
        [
            {"query": "before the window", "at": "2026-11-30T23:59:59Z"},
            {"query": "first moment", "at": "2026-12-01T00:00:00"},  # no zone: UTC
            {"query": "inside", "at": "2026-12-01T13:00:00+02:00", "count": 3},
            {"query": "the end is excluded", "at": "2026-12-02T00:00:00Z"},
        ],
    )
    window = SampleSource(
        path=log, timestamp_field="at", since="2026-12-01T00:00:00Z", until="2026-12-02"
    )
    sample = build_sample("s", SampleSpec(source=window, privacy="plain"))
    assert [(q.text, q.count) for q in sample.queries] == [("inside", 3), ("first moment", 1)]
    assert sample.log_queries == 2 and sample.log_traffic == 4
    with pytest.raises(ValidationError, match="need 'timestamp_field'"):
        SampleSource(path=log, since="2026-12-01")
    with pytest.raises(ValidationError, match="'since' must be before 'until'"):
        SampleSource(path=log, timestamp_field="at", since="2026-12-02", until="2026-12-01")
    write_jsonl(log, [{"query": "a"}, {"query": "no time", "at": None}])
    with pytest.raises(SampleError) as raised:
        read_log(window)
    assert f"{log}: line 1: no time in 'at'" in str(raised.value)
    assert f"{log}: line 2: no time in 'at'" in str(raised.value)
