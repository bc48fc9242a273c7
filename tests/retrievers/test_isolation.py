"""stdout_to_stderr on the real descriptors (pytest's fd capture): Python writes from any thread,
descriptor-1 writes, C stdio and a child process go to stderr; stdout comes back afterwards, also
after an error or an interrupt, and nested uses share one redirection."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import threading

import pytest

from retrieval_eval.retrievers.isolation import stdout_to_stderr


def test_every_kind_of_stdout_write_goes_to_stderr_and_stdout_comes_back(
    capfd: pytest.CaptureFixture[str],
) -> None:
    print("before")
    with stdout_to_stderr():
        print("python")
        os.write(1, b"descriptor\n")
        ctypes.CDLL(None).printf(b"c stdio\n")
        subprocess.run(["echo", "child"], check=True)
        thread = threading.Thread(target=print, args=("thread",))
        thread.start()
        thread.join()
    print("after")
    out, err = capfd.readouterr()
    assert out == "before\nafter\n"
    # C's buffer is flushed when stdout is given back: its line comes last, still on stderr
    assert sorted(err.splitlines()) == ["c stdio", "child", "descriptor", "python", "thread"]


@pytest.mark.parametrize("error", [RuntimeError, KeyboardInterrupt])
def test_stdout_comes_back_after_an_error(
    capfd: pytest.CaptureFixture[str], error: type[BaseException]
) -> None:
    stream = sys.stdout
    with pytest.raises(error), stdout_to_stderr():
        print("inside")
        raise error()
    assert sys.stdout is stream
    print("after")
    assert capfd.readouterr() == ("after\n", "inside\n")


def test_nested_uses_share_one_redirection(capfd: pytest.CaptureFixture[str]) -> None:
    with stdout_to_stderr():
        with stdout_to_stderr():
            os.write(1, b"inner\n")
        os.write(1, b"outer\n")  # the inner block's end does not give stdout back yet
    os.write(1, b"after\n")
    assert capfd.readouterr() == ("after\n", "inner\nouter\n")
