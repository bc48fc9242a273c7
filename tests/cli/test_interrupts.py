"""Interrupted runs exit 130 (Ctrl-C, SIGINT, a KeyboardInterrupt a retriever raises) or 143
(SIGTERM), never 1 (a regression), and say what was and was not saved: nothing while the
retriever runs; the saved run's id while its report is written; the runs a ``db flush`` saved
before it stopped (the next one saves the rest). Real processes, real signals.
"""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest
from sqlalchemy import func, select
from store.builders import hits, make_run, pg_schema
from store.test_replay_target import spool

from cli import test_retriever_output
from cli.test_cli_core import EXE
from cli.test_retriever_output import environment, stored_runs
from retrieval_eval.store import open_store
from retrieval_eval.store.schema import GRADER, eval_result

work = test_retriever_output.work  # two.yaml and process_retrievers.py in tmp_path
NOTHING_SAVED = "before the run was evaluated in full: nothing was saved or spooled"
SIGINT_SAID = "interrupted (Ctrl-C, SIGINT or a KeyboardInterrupt)"


def start(work: Path, set_file: str, retriever: str) -> subprocess.Popen[str]:
    """``run`` in the background, SIGINT at its default even where this test's shell ignores it
    (a background job): Python then turns it into KeyboardInterrupt."""
    return subprocess.Popen(
        [str(EXE), "run", set_file, f"process_retrievers:{retriever}", "--format", "json"],
        cwd=work,
        env=environment(work),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def nothing_kept(work: Path) -> bool:
    spool = work / "home" / "spool"
    return stored_runs(work) == 0 and not (spool.is_dir() and any(spool.iterdir()))


@pytest.mark.parametrize(
    ("sent", "code", "said"),
    [(signal.SIGINT, 130, SIGINT_SAID), (signal.SIGTERM, 143, "terminated by SIGTERM")],
    ids=["SIGINT", "SIGTERM"],
)
def test_a_signal_while_the_retriever_runs_exits_with_its_code_and_saves_nothing(
    work: Path, sent: signal.Signals, code: int, said: str
) -> None:
    proc = start(work, "two.yaml", "slow")
    assert proc.stderr is not None
    for line in proc.stderr:  # the retriever was asked: the run is under way
        if line == "slow retriever asked\n":
            break
    else:
        pytest.fail(f"the run ended before the retriever was asked: {proc.wait()}")
    proc.send_signal(sent)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == code, err
    assert f"error: {said} {NOTHING_SAVED}" in err
    assert "Traceback" not in err and out == ""
    assert nothing_kept(work)


def test_a_keyboard_interrupt_inside_a_retriever_exits_130(work: Path) -> None:
    proc = start(work, "two.yaml", "interrupting")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert f"error: {SIGINT_SAID} {NOTHING_SAVED}" in err
    assert "Traceback" not in err and out == ""
    assert nothing_kept(work)


def test_an_interrupt_while_the_report_is_written_names_the_saved_run(work: Path) -> None:
    questions = "".join(
        f"  - {{id: q{i}, question: q{i}, form: match, expected_document_ids: [a]}}\n"
        for i in range(3000)
    )
    (work / "big.yaml").write_text(f"identifier: big\nquestions:\n{questions}")
    proc = start(work, "big.yaml", "quiet")  # its report is far more than a pipe holds
    assert proc.stdout is not None
    assert proc.stdout.read(1) == "{"  # the report is being written: it blocks, unread, now
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert f"error: {SIGINT_SAID} while the report was written; the run is saved as run 1" in err
    assert "`retrieval-eval runs show 1 --format json > FILE` writes its report again" in err
    assert "Traceback" not in err
    assert stored_runs(work) == 1


def test_an_interrupted_replay_names_the_runs_it_saved_and_the_next_one_saves_the_rest(
    work: Path, pg_url: str
) -> None:
    """PostgreSQL, where a save of one (set, retriever) waits for that key's advisory lock: with
    the lock held here, the replay saves the first run and waits at the second."""
    folder = work / "home" / "spool"
    with pg_schema(pg_url) as url:
        spool(make_run(hits(1, 2), retriever="first", day=0), url, folder)
        for day in (1, 2, 3):
            spool(make_run(hits(1, 2), retriever="later", day=day), url, folder)
        env = environment(work)
        replay = [str(EXE), "db", "flush", "--db", url]
        with open_store(url) as store, store.transaction() as conn:
            store.serialised(conn, "demo.set", "later", GRADER)  # what a save of "later" waits for
            proc = subprocess.Popen(
                replay,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
            )
            count = select(func.count()).select_from(eval_result)
            while conn.execute(count).scalar_one() == 0:  # "first" is saved; "later" waits
                assert proc.poll() is None, proc.communicate()
                time.sleep(0.02)
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=30)
        assert proc.returncode == 130, err
        assert f"error: {SIGINT_SAID} while replaying {folder}: saved run ids 1;" in err
        assert "the other spooled runs stay there" in err and "Traceback" not in err
        assert len(list(folder.glob("*.json"))) == 3
        again = subprocess.run(replay, env=env, capture_output=True, text=True, timeout=60)
        assert again.returncode == 0, again.stderr
        assert list(folder.glob("*.json")) == []
        with open_store(url) as store:
            assert len(store.history("demo.set", "later")) == 3
