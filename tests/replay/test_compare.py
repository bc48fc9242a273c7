"""Replays through the labelled protocol, compared query by query, and the drift verdict."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from retrieval_eval.replay.compare import DriftThresholds, Ranked, compare
from retrieval_eval.replay.rbo import rbo
from retrieval_eval.replay.run import ReplaySettings, replay_sample
from retrieval_eval.replay.specs import SampleSource, SampleSpec
from retrieval_eval.retrievers.base import FunctionRetriever
from retrieval_eval.workflows.samples import build_sample


def sample_of(tmp_path: Path, queries: dict[str, int], privacy: str = "plain"):
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps({"query": q, "count": c}) + "\n" for q, c in queries.items()))
    return build_sample("s", SampleSpec(source=SampleSource(path=log), privacy=privacy))  # type: ignore[arg-type]


def ranking_of(text: str, limit: int) -> list[str]:
    # a stable ranking per query, with duplicates the protocol collapses
    base = [f"doc-{abs(hash(text + str(i))) % 50}" for i in range(limit)]
    return [x for pair in zip(base, base, strict=True) for x in pair][:limit]


QUERIES = {f"question number {i}": 100 - i for i in range(40)}


def test_a_retriever_against_itself_has_rbo_one_and_nothing_changed(tmp_path: Path) -> None:
    sample = sample_of(tmp_path, QUERIES)
    texts = {q.key: q.text for q in sample.queries}
    retriever = FunctionRetriever(ranking_of, identifier="same")
    first = replay_sample(sample, texts, retriever)
    second = replay_sample(sample, texts, retriever)
    assert all(len(r.ids) == len(set(r.ids)) and 0 < len(r.ids) <= 10 for r in first)
    result = compare(first, second)
    assert result.state == "no_drift"
    assert result.overall.mean_rbo == pytest.approx(1.0)
    assert result.overall.top1_changed == 0 and result.errors == 0
    assert all(c.jaccard == 1.0 and c.overlap3 == 3 for c in result.changes)


def test_the_protocol_overfetches_and_collapses_as_a_labelled_run(tmp_path: Path) -> None:
    asked: list[int] = []

    def duplicates(text: str, limit: int) -> list[str]:
        asked.append(limit)
        return ["a", "a", "b", "", "c", "b", "d"]

    sample = sample_of(tmp_path, {"one": 1})
    [ranked] = replay_sample(
        sample,
        {q.key: q.text for q in sample.queries},
        FunctionRetriever(duplicates),
        ReplaySettings(k=3),
    )
    assert asked == [12] and ranked.ids == ("a", "b", "c")


def test_a_changed_index_drifts_and_the_most_changed_come_first(tmp_path: Path) -> None:
    sample = sample_of(tmp_path, QUERIES)
    texts = {q.key: q.text for q in sample.queries}
    before = replay_sample(sample, texts, FunctionRetriever(ranking_of))

    def rebuilt(text: str, limit: int) -> list[str]:
        ids = ranking_of(text, limit)
        return list(reversed(ids)) if text.endswith(("1", "3", "5", "7")) else ids

    after = replay_sample(sample, texts, FunctionRetriever(rebuilt))
    result = compare(before, after, thresholds=DriftThresholds(max_top1_changed=0.1))
    moved = [c for c in result.changes if c.top1_changed]
    assert result.state == "drift"
    assert result.overall.top1_changed == len(moved) > 0
    assert any("max_top1_changed" in reason for reason in result.reasons)
    # per query, the figure is RBO of the two stored rankings
    for change in result.changes:
        assert change.rbo == pytest.approx(rbo(change.before, change.after, 0.9).ext)
    top = result.most_changed(5)
    assert all(c.rbo is not None and c.rbo < 1 for c in top)
    weights = [(1 - (c.rbo or 0)) * c.count for c in top]
    assert weights == sorted(weights, reverse=True)
    # weighted by count: frequent queries (low numbers) weigh more
    assert result.overall.weighted_top1_changed is not None
    assert set(result.buckets) <= {"head", "torso", "tail"}


def test_errors_are_never_unchanged_and_too_many_make_the_replay_invalid(tmp_path: Path) -> None:
    sample = sample_of(tmp_path, QUERIES)
    texts = {q.key: q.text for q in sample.queries}
    good = replay_sample(sample, texts, FunctionRetriever(ranking_of))

    def flaky(text: str, limit: int) -> list[str]:
        if text.endswith("0"):
            raise ConnectionError(f"index down while asking {text!r}")
        return ranking_of(text, limit)

    bad = replay_sample(sample, texts, FunctionRetriever(flaky))
    failed = [
        c
        for c in compare(good, bad, thresholds=DriftThresholds(max_error_rate=0.5)).changes
        if c.error
    ]
    assert len(failed) == 4 and all(c.rbo is None and c.top1_changed is None for c in failed)
    strict = compare(good, bad)
    assert strict.state == "invalid" and "max_error_rate" in strict.reasons[0]
    assert strict.overall.queries == 36


def test_error_texts_show_no_more_of_a_query_than_its_stored_form(tmp_path: Path) -> None:
    sample = sample_of(tmp_path, {"reset password for jane.doe@example.com": 3}, privacy="redacted")
    [query] = sample.queries

    def failing(text: str, limit: int) -> list[str]:
        raise RuntimeError(f"no results for {text!r} (raw: jane.doe@example.com)")

    [ranked] = replay_sample(
        sample, {query.key: "reset password for jane.doe@example.com"}, FunctionRetriever(failing)
    )
    assert ranked.error is not None and "jane" not in ranked.error and "<email>" in ranked.error


def test_the_first_replay_has_nothing_to_compare() -> None:
    result = compare(None, [Ranked("k", "q", 1, "head", ("a",))])
    assert result.state == "first" and result.overall.queries == 0
