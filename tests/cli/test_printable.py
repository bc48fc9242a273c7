"""What a command was given, it can print (``retrieval_eval.cli.printable_streams``).

A file name with a byte that is not UTF-8 reaches Python as a lone surrogate (``\\udcff``). With
a strict stdout (``PYTHONIOENCODING=utf-8``, or a UTF-8 locale other than C.UTF-8) the "ok:" line
of ``sets validate`` crashed after the check had passed. Such a byte now goes out as itself, and
any other lone surrogate as its escape.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

EXE = Path(sys.executable).parent / "retrieval-eval"
SET = {"identifier": "t.odd", "questions": [{"id": "q", "question": "Why?", "form": "match"}]}


@pytest.mark.parametrize("encoding", ["utf-8", "utf-8:surrogateescape"])
def test_a_file_name_that_is_not_utf8_is_printed_as_its_own_bytes(
    tmp_path: Path, encoding: str
) -> None:
    path = Path(os.fsdecode(bytes(tmp_path) + b"/good_\xff.json"))
    path.write_text(json.dumps(SET), encoding="utf-8")
    env = {**os.environ, "PYTHONIOENCODING": encoding}
    done = subprocess.run(
        [str(EXE), "sets", "validate", str(path)], env=env, capture_output=True, timeout=60
    )
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")[-2000:]
    assert b"good_\xff.json: set 't.odd', 1 questions" in done.stdout


@pytest.mark.parametrize("encoding", ["utf-8", "utf-8:surrogateescape"])
def test_any_other_lone_surrogate_is_printed_escaped(encoding: str) -> None:
    code = "from retrieval_eval.cli import printable_streams; printable_streams(); print('a\\ud800b\\udcffc')"
    env = {**os.environ, "PYTHONIOENCODING": encoding}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, timeout=60, check=True
    )
    assert done.stdout == b"a\\ud800b\xffc\n"
