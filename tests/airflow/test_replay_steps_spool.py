"""The replay DAG's join_batches and compare_and_save tasks with the store down from its start:
the :class:`~retrieval_eval.workflows.replay.Replay` workflow's reduce and record steps and the
failure the record task raises, as the adapter runs them (each step a workflow rebuilt from the
job, the store resolved per step)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from dag_helpers import EXAMPLES

from retrieval_eval.errors import StoreUnavailableError
from retrieval_eval.replay.record import ReplayRecord
from retrieval_eval.workflows.replay import Replay, ReplayJob, ReplayPart


def test_a_replay_compare_task_that_finds_the_store_down_spools_only_the_sample_replayed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sample drawn from its log again is the one planned, so the replay is spooled (and
    the task fails for a retry naming the file); a planned fingerprint that is not (the log
    changed) spools nothing and says the rankings stay in the DAG run."""
    monkeypatch.setenv("RETRIEVAL_EVAL_HOME", str(tmp_path / "home"))
    config = tmp_path / "replay.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "retrievers": {"bm25": {"type": "lexical", "corpus": str(EXAMPLES / "corpus")}},
                "samples": {"top": {"source": {"path": str(EXAMPLES / "logs" / "queries.jsonl")}}},
            }
        )
    )
    up = f"sqlite:///{tmp_path / 'store.sqlite'}"
    down = "postgresql://u:hunter22@127.0.0.1:1/none"

    def job(url: str, key: str | None = None) -> ReplayJob:
        return ReplayJob(
            config_path=str(config), sample="top", retriever="bm25", store_url=url, run_key=key
        )

    (batch,) = Replay(job(up)).plan(1)
    done = Replay(job(up)).execute(batch)
    assert batch.sample_id is not None and len(done.after) == batch.stop

    def save(fingerprint: str, key: str) -> None:
        part = done.model_copy(update={"fingerprint": fingerprint})
        reduced = Replay(job(down, key)).reduce([part]).model_dump_json()  # an XCom
        flow = Replay(job(down, key))
        failure = flow.failure(flow.record(ReplayRecord.model_validate_json(reduced)))
        if failure is not None:
            raise failure

    with pytest.raises(StoreUnavailableError, match=r"not spooled.*the log changed") as info:
        save("0" * 64, "k5")
    assert "hunter22" not in str(info.value)
    assert not (tmp_path / "home" / "spool").exists()
    with pytest.raises(StoreUnavailableError, match="the replay was spooled to") as info:
        save(batch.fingerprint, "k6")
    (path,) = (tmp_path / "home" / "spool").glob("replay-*.json")
    assert "hunter22" not in str(info.value) and "hunter22" not in path.read_text()
    assert ReplayPart.model_validate_json(done.model_dump_json()) == done  # the XCom round trip
    assert "hunter22" not in job(down).model_dump_json()  # the job never carries the URL
