"""Two real ``retrieval-eval sets promote`` processes of one set at once: both read version 1,
and neither may write its version 2 over the other's. The test holds the set folder's lock (as a
third promote would) until both processes wait for it, so both have read the set before either
writes; then one writes version 2 and the other is refused (exit 2, nothing written, "run the
command again"), and running it again gives version 3 with both reviewers' judgments."""

from __future__ import annotations

import fcntl
import os
import subprocess
import time
from pathlib import Path

import pytest

from cli.test_cli_core import EXE
from cli.test_user_files import set_files
from retrieval_eval import load_golden_set
from retrieval_eval.labels.judgments import Judgment, write_judgments


def _waiting_on(folder: Path) -> int:
    """How many processes wait for an flock on ``folder`` (the ``->`` lines of /proc/locks)."""
    inode = f":{os.stat(folder).st_ino} "
    lines = Path("/proc/locks").read_text().splitlines()
    return sum(1 for line in lines if "->" in line and " FLOCK " in line and inode in line)


@pytest.mark.skipif(not Path("/proc/locks").exists(), reason="needs Linux's /proc/locks")
def test_two_promotes_at_once_one_writes_the_other_is_refused_and_nothing_is_lost(
    tmp_path: Path,
) -> None:
    sets = tmp_path / "sets"
    sets.mkdir()
    ann = [Judgment(question_id="q1", document_id="ann-doc", grade=2, rater="ann")]
    set_file, config, _ = set_files(sets, tmp_path, ann)
    files = {}
    for rater in ("ann", "bob"):
        files[rater] = tmp_path / f"{rater}.jsonl"
        row = Judgment(question_id="q1", document_id=f"{rater}-doc", grade=2, rater=rater)
        write_judgments([row], files[rater])
    env = {**os.environ, "RETRIEVAL_EVAL_HOME": str(tmp_path / "home")}
    env.pop("RETRIEVAL_EVAL_CONFIG", None)

    def promote(rater: str) -> subprocess.Popen[str]:
        args = ["sets", "promote", "small", "--judgments", str(files[rater])]
        return subprocess.Popen(
            [str(EXE), *args, "--config", str(config)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )

    held = os.open(sets, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(held, fcntl.LOCK_EX)
    try:
        racing = {rater: promote(rater) for rater in ("ann", "bob")}
        deadline = time.monotonic() + 120
        while _waiting_on(sets) < 2:  # both have read version 1 and wait to write
            ended = [r for r, p in racing.items() if p.poll() is not None]
            assert not ended, f"{ended} ended before the lock: {racing[ended[0]].communicate()}"
            assert time.monotonic() < deadline, "the promotes never reached the lock"
            time.sleep(0.05)
    finally:
        os.close(held)  # the lock is released: they race for it
    done = {rater: (*p.communicate(timeout=120), p.returncode) for rater, p in racing.items()}
    codes = sorted(code for _, _, code in done.values())
    assert codes == [0, 2], done
    (winner,) = [r for r, (_, _, code) in done.items() if code == 0]
    (loser,) = [r for r, (_, _, code) in done.items() if code == 2]
    assert f"wrote {set_file}: set 'small' version 2" in done[winner][0]
    assert done[loser][1] == (
        f"error: {set_file}: set 'small' changed since this promote read it (now version 2, "
        "written by another promote or an edit): nothing was written: run the command again "
        "to promote onto it\n"
    )
    written = load_golden_set(set_file)
    assert written.version == 2 and written.changelog[-1].raters == (winner,)
    again = promote(loser)
    _, err = again.communicate(timeout=120)
    assert again.returncode == 0, err
    final = load_golden_set(set_file)
    assert final.version == 3
    assert set(final.questions[1].expected_document_ids) == {"d1", "ann-doc", "bob-doc"}
    assert [entry.raters for entry in final.changelog] == [(winner,), (loser,)]
