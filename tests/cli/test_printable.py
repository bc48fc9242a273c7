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
EXAMPLE_SET = Path(__file__).resolve().parents[2] / "examples" / "golden" / "handbook.yaml"
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


def _run(*args: str) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    return subprocess.run([str(EXE), *args], env=env, capture_output=True, timeout=60)


def test_a_store_url_that_is_not_text_is_bad_input_and_its_password_stays_hidden(
    tmp_path: Path,
) -> None:
    # a password with such a byte used to crash the masking itself (urllib's quote)
    for url in (
        os.fsdecode(b"sqlite:///" + bytes(tmp_path) + b"/z\xff.sqlite"),
        os.fsdecode(b"postgresql://eval:pa55\xffword@127.0.0.1:5432/test"),
        os.fsdecode(b"postgresql://ev\xffal:pa55word@127.0.0.1:5432/test"),
    ):
        done = _run("db", "url", "--db", url)
        assert done.returncode == 2, done.stderr[-2000:]
        assert b"the store URL holds '\\udcff', a byte that is not UTF-8 text" in done.stderr
        assert b"pa55" not in done.stderr + done.stdout


def test_a_name_that_is_not_text_is_bad_input_not_a_traceback(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'r.sqlite'}"
    assert _run("run", str(EXAMPLE_SET), "cli.store_retrievers:empty", "--db", db).returncode == 0
    for args in (
        ["runs", "list", os.fsdecode(b"handbook.demo\xff"), "empty", "--db", db],
        ["compare", os.fsdecode(b"handbook.demo\xff"), "a", "b", "--db", db],
    ):
        done = _run(*args)
        assert done.returncode == 2, done.stderr[-2000:]
        assert done.stderr.startswith(b"error: a value holds '\\udcff', a byte that is not UTF-8")


def test_a_character_the_stream_cannot_hold_still_fails_as_before() -> None:
    # only lone surrogates are escaped: a CJK id on a latin-1 pipe would otherwise turn into
    # "\u6771" silently, and a JSON report into text that no longer parses (QA finding)
    code = (
        "from retrieval_eval.cli import printable_streams; printable_streams(); "
        "print('\\udcff caf\\u00e9'); print('\\u6771\\u4eac')"
    )
    env = {**os.environ, "PYTHONIOENCODING": "latin-1"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, timeout=60)
    assert done.returncode == 1 and b"UnicodeEncodeError" in done.stderr
    assert done.stdout == b"\xff caf\xe9\n"
