"""The README's console blocks run as written from a fresh clone, and make demo's next steps work.

Conventions in README.md, on the line just before a console block:

- ``<!-- not-run: REASON -->``: the block needs something a test machine does not have (an
  Airflow deployment, a server, a large download); the reason is required and the list is short.
- ``<!-- synopsis -->``: a usage synopsis (``[--option VALUE]``), not a command line; every
  command and option it names must exist (checked against the click app), and a command shown
  with options lists all of them, ``--format`` with exactly its choices (across the synopses).

Every other console block is run by bash (``set -euo pipefail``), one process per block, in a
temporary folder holding a copy of ``examples/`` (the repository is never touched), with the
venv's ``bin`` first on ``PATH`` and a temporary ``RETRIEVAL_EVAL_HOME``. A comment line
``#   TEXT`` (three spaces) is what the command above prints: it must appear in the output.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import click
import pytest
from helpers import served_page

from retrieval_eval.cli import cli

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
BIN = Path(sys.executable).parent
MOST_NOT_RUN = 4  # make demo/test, the production steps, curl against Airflow, torch
BLOCK = re.compile(
    r"(?:<!-- (?P<kind>not-run|synopsis)(?::[ ]*(?P<reason>[^\n]*?))? -->\n)?"
    r"```console\n(?P<body>.*?)```",
    re.S,
)


def _blocks() -> list[tuple[str, str, str]]:
    """(kind, reason, body) of every console block; kind 'run' when unmarked."""
    text = README.read_text(encoding="utf-8")
    found = [(m["kind"] or "run", m["reason"] or "", m["body"]) for m in BLOCK.finditer(text)]
    assert len(found) == text.count("```console"), "a console block the pattern missed"
    return found


def _runnable() -> list[str]:
    return [body for kind, _, body in _blocks() if kind == "run"]


def test_skipped_blocks_are_few_and_each_says_why() -> None:
    blocks = _blocks()
    not_run = [reason for kind, reason, _ in blocks if kind == "not-run"]
    assert all(len(reason) > 10 for reason in not_run), not_run
    assert len(not_run) <= MOST_NOT_RUN
    assert len(_runnable()) >= 1
    for _, _, body in blocks:  # user examples never point at this machine's ../shared data
        assert "../shared" not in body


def _alternatives(line: str) -> list[str]:
    return [part.strip() for part in line.removeprefix("retrieval-eval ").split(" | ")]


def _resolve(group: click.Group, words: list[str]) -> tuple[click.Command, click.Group]:
    """The command the words name, and the group the last name was found in."""
    command: click.Command = group
    parent = group
    for word in words:
        if not isinstance(command, click.Group) or word.startswith(("-", "[")):
            break
        names = word.split("|")
        for name in names:
            assert name in command.commands, f"{name!r} is not a command of {command.name!r}"
        if len(names) > 1:
            break
        parent, command = command, command.commands[word]
    return command, parent


def _synopsis_lines(body: str) -> list[str]:
    """A synopsis block's lines, continuation lines (indented) joined to the line above."""
    lines: list[str] = []
    for raw in body.splitlines():
        text = raw.split("#")[0].strip()
        if raw.startswith(" ") and lines:
            lines[-1] += " " + text
        else:
            lines.append(text)
    return lines


def _described(body: str) -> list[tuple[click.Command, str]]:
    """(command, its text) for every alternative of every line of a synopsis block."""
    assert isinstance(cli, click.Group)
    found = []
    for line in _synopsis_lines(body):
        start: click.Group = cli
        for i, alternative in enumerate(_alternatives(line)):
            words = alternative.split()
            # "sets list | validate": the next ones are sets' commands too; "db upgrade | db
            # replay": each names its group again
            known = isinstance(start, click.Group) and words[0] in start.commands
            command, parent = _resolve(start if known else cli, words)
            if i == 0:
                start = parent
            found.append((command, alternative))
    return found


def _options(command: click.Command) -> dict[str, click.Parameter]:
    return {o: p for p in command.params for o in getattr(p, "opts", []) if o.startswith("--")}


_SYNOPSES = [body for kind, _, body in _blocks() if kind == "synopsis"]


@pytest.mark.parametrize("body", _SYNOPSES, ids=lambda b: b[:30])
def test_synopsis_blocks_name_real_commands_and_options(body: str) -> None:
    for command, text in _described(body):
        options = _options(command)
        for option in re.findall(r"--[a-z0-9-]+", text):
            assert option in options, f"{text}: {command.name} has no {option}"


def test_a_command_with_a_synopsis_lists_every_option_and_choice() -> None:
    """A command shown with options in some synopsis shows all of them (across the README's
    synopses), and a ``--format a|b|c`` lists exactly the command's choices."""
    shown: dict[int, tuple[click.Command, str]] = {}
    for body in _SYNOPSES:
        for command, text in _described(body):
            if "--" in text:
                previous = shown.get(id(command), (command, ""))[1]
                shown[id(command)] = (command, previous + " " + text)
    assert len(shown) >= 8
    for command, text in shown.values():
        listed = set(re.findall(r"--[a-z0-9-]+", text))
        for option, param in _options(command).items():
            assert option in listed, f"{command.name}: {option} is missing from its synopsis"
            if isinstance(param.type, click.Choice):
                for written in re.findall(rf"{option} ([a-z0-9|]+)", text):
                    assert set(written.split("|")) == set(param.type.choices), (
                        f"{command.name} {option}: {written} != {param.type.choices}"
                    )


def test_the_lint_walk_through_quotes_the_refund_pages_similarity() -> None:
    """The README's "EU and general refund pages" figure is their exact word-3-shingle Jaccard."""
    from retrieval_eval.lint.minhash import ShingleSets, jaccard
    from retrieval_eval.lint.signature_cache import SHINGLE_WORDS
    from retrieval_eval.retrievers.corpus import read_corpus

    documents = {d.id: d.content for d in read_corpus(ROOT / "examples" / "corpus")}
    pages = [documents["billing/refunds.md"], documents["billing/refunds-eu.md"]]
    shingles = ShingleSets.from_texts(pages, SHINGLE_WORDS)
    similarity = jaccard(shingles.shingles(0), shingles.shingles(1))
    text = " ".join(README.read_text(encoding="utf-8").split())
    assert f"refund pages ({similarity * 100:.1f} % alike" in text
    assert f"as {similarity * 100:.0f} % with `document_similarity: 0.5`" in text


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """A folder with a copy of examples/, as in a fresh clone (nothing else of the repo)."""
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    return tmp_path


def _environment(workdir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RETRIEVAL_EVAL_")}
    env.update(
        PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}", RETRIEVAL_EVAL_HOME=str(workdir / "home")
    )
    return env


def _bash(script: str, workdir: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", "set -euo pipefail\n" + script],
        cwd=workdir,
        env={**_environment(workdir), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("body", _runnable(), ids=lambda b: b.splitlines()[0][:40])
def test_a_console_block_runs_as_written(workdir: Path, body: str) -> None:
    done = _bash(body, workdir)
    assert done.returncode == 0, done.stdout + done.stderr
    printed = [line[4:] for line in body.splitlines() if line.startswith("#   ")]
    for expected in printed:
        assert expected in done.stdout, f"{expected!r} not printed:\n{done.stdout}"


def _next_steps() -> list[str]:
    return (ROOT / "examples" / "next-steps.txt").read_text(encoding="utf-8").splitlines()


def test_make_demo_ends_with_the_next_steps() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = makefile.split("\ndemo: install\n", 1)[1].split("\n\n", 1)[0]
    assert recipe.splitlines()[-1].strip() == "@cat examples/next-steps.txt"
    text = "\n".join(_next_steps())
    for topic in ("history", "dashboard", "three lines"):
        assert topic in text


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_next_steps_work_after_the_demo_run(workdir: Path) -> None:
    (workdir / ".venv").symlink_to(BIN.parent)  # the next steps name .venv/bin/...
    demo_db = "sqlite:///.retrieval_eval/demo.sqlite"
    lines = _next_steps()
    commands = [line.strip() for line in lines if line.strip().startswith(".venv/bin/")]
    history, _serve, own_run = commands  # the dashboard has its own test below
    assert " history handbook.demo handbook_bm25 " in history
    start = next(i for i, line in enumerate(lines) if "as my_search.py" in line) + 1
    end = next(i for i, line in enumerate(lines) if i > start and not line.startswith("    "))
    python = [line[4:] for line in lines[start:end]]  # the function, as the file's lines
    assert len(python) + 1 == 3, "three lines: the function and the run command"
    (workdir / "my_search.py").write_text("\n".join(python) + "\n")
    script = (
        f"mkdir -p .retrieval_eval\nRETRIEVAL_EVAL_DB={demo_db} "
        f"RETRIEVAL_EVAL_CONFIG=examples/retrieval_eval.yaml "
        ".venv/bin/retrieval-eval run handbook.demo handbook_bm25 > /dev/null\n"
        f"{history}\necho ===\n{own_run}\n"
    )
    done = _bash(script, workdir)
    assert done.returncode == 0, done.stdout + done.stderr
    listed, own = done.stdout.split("===\n")
    assert "baseline" in listed and "handbook.demo × handbook_bm25" in listed
    assert "Set handbook.demo  Retriever my_search:search  Questions 46" in own
    assert "Verdict: BASELINE" in own


def test_the_dashboard_of_the_next_steps_serves_the_demo_store(workdir: Path) -> None:
    (workdir / ".venv").symlink_to(BIN.parent)
    (line,) = [line.strip() for line in _next_steps() if " serve " in line]
    port = _free_port()
    assert line.endswith("--port 8000")
    server = subprocess.Popen(
        ["bash", "-c", "exec " + line.replace("--port 8000", f"--port {port}")],
        cwd=workdir,
        env=_environment(workdir),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        page = served_page(server, f"http://127.0.0.1:{port}/")
        assert "retrieval-eval" in page
        assert not (workdir / ".retrieval_eval").exists()  # the dashboard never creates a store
    finally:
        server.terminate()
        server.wait(timeout=10)
