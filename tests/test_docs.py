"""Every code block of the README and the docs site (docs/**/*.md) is run or parsed, as written
from a fresh clone, and make demo's next steps work.

Conventions, on the line just before a block:

- ``<!-- not-run: REASON -->``: the block needs something a test machine does not have (an
  Airflow deployment, a server, a large download); the reason is required and the budget for
  the whole site is small (:data:`MOST_NOT_RUN`).
- ``<!-- synopsis -->`` (console blocks): a usage synopsis (``[--option VALUE]``), not a command
  line; every command and option it names must exist (checked against the click app), and a
  command shown with options lists all of them, ``--format`` with exactly its choices (across
  the synopses).

Every other ``console`` block is run by bash (``set -euo pipefail``), one process per block, in a
temporary folder holding a copy of ``examples/`` (the repository is never touched), with the
venv's ``bin`` first on ``PATH`` and a temporary ``RETRIEVAL_EVAL_HOME``. A comment line
``#   TEXT`` (three spaces) is what the command above prints: it must appear in the output.
A ``python`` block is run the same way (``python -c``) unless it is a file (its first line a
``# path.py`` comment: the test that uses it runs it); a ``shell`` block is checked by
``bash -n``; ``yaml`` and ``json`` blocks are parsed, a ``dockerfile`` block's lines must be
instructions. ``text`` and ``markdown`` blocks show
output and are only checked to be there.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import click
import pytest
import yaml
from helpers import served_page

from retrieval_eval.cli import cli

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").rglob("*.md"))]
BIN = Path(sys.executable).parent
# make demo/test (README and getting started), installing from a clone, the production steps,
# curl against Airflow, torch
MOST_NOT_RUN = 7
BLOCK = re.compile(
    r"(?:<!-- (?P<kind>not-run|synopsis)(?::[ ]*(?P<reason>[^\n]*?))? -->\n)?"
    r"^(?P<indent>[ ]*)```(?P<lang>[a-z]*)\n(?P<body>.*?)^(?P=indent)```",
    re.S | re.M,
)


def _name(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


def _all_blocks() -> list[tuple[str, str, str, str, str]]:
    """(page, language, kind, reason, body) of every fenced block; kind 'run' when unmarked."""
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        blocks = list(BLOCK.finditer(text))
        fences = len(re.findall(r"^[ ]*```", text, re.M))
        assert fences == 2 * len(blocks), f"{_name(page)}: a block the pattern missed"
        for m in blocks:
            indent = len(m["indent"])
            body = "".join(line[indent:] for line in m["body"].splitlines(keepends=True))
            found.append((_name(page), m["lang"], m["kind"] or "run", m["reason"] or "", body))
    return found


_BLOCKS = _all_blocks()


def _blocks() -> list[tuple[str, str, str]]:
    """(kind, reason, body) of every console block."""
    return [(kind, reason, body) for _, lang, kind, reason, body in _BLOCKS if lang == "console"]


def _runnable() -> list[str]:
    return [body for kind, _, body in _blocks() if kind == "run"]


def test_skipped_blocks_are_few_and_each_says_why() -> None:
    not_run = [(page, reason) for page, _, kind, reason, _ in _BLOCKS if kind == "not-run"]
    assert all(len(reason) > 10 for _, reason in not_run), not_run
    assert len(not_run) <= MOST_NOT_RUN, not_run
    assert len(_runnable()) >= 1
    for _, _, _, _, body in _BLOCKS:  # user examples never point at this machine's ../shared
        assert "../shared" not in body


def test_the_readmes_links_lead_to_files_of_the_repository() -> None:
    """The README is read on its own (a clone, a code host): each relative link names a file or
    folder that exists (the docs site checks its own links in its --strict build)."""
    text = README.read_text(encoding="utf-8")
    targets = re.findall(r"\]\((?!https?:|#)([^)#\s]+)", text)
    assert len(targets) >= 20
    missing = [target for target in targets if not (ROOT / target).exists()]
    assert not missing, missing


def test_every_block_has_a_language_the_tests_check() -> None:
    languages = {(page, lang) for page, lang, *_ in _BLOCKS}
    unknown = [(page, lang) for page, lang in languages if lang not in CHECKS]
    assert not unknown, f"blocks no test runs or parses (give them a known language): {unknown}"


def _parse_yaml(body: str) -> None:
    assert list(yaml.safe_load_all(body)), "an empty YAML block"


def _parse_shell(body: str) -> None:
    done = subprocess.run(["bash", "-n"], input=body, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


DOCKERFILE = re.compile(r"(FROM|RUN|COPY|ADD|ENV|ARG|WORKDIR|USER|CMD|ENTRYPOINT|LABEL|EXPOSE) ")


def _parse_dockerfile(body: str) -> None:
    lines = [line for line in body.splitlines() if line.strip() and not line.startswith("#")]
    assert lines[0].startswith("FROM "), "a Dockerfile starts FROM an image"
    for line in lines:
        assert DOCKERFILE.match(line), f"not a Dockerfile instruction: {line}"


def _shown(body: str) -> None:
    assert body.strip(), "an empty block"


CHECKS = {
    "yaml": _parse_yaml,
    "json": lambda body: json.loads(body),
    "shell": _parse_shell,
    "dockerfile": _parse_dockerfile,
    "text": _shown,
    "markdown": _shown,
    "console": _shown,  # run or checked as a synopsis below
    "python": lambda body: compile(body, "<block>", "exec"),  # and run below, unless a file
}


@pytest.mark.parametrize(
    ("page", "lang", "body"),
    [(page, lang, body) for page, lang, _, _, body in _BLOCKS],
    ids=lambda v: v.splitlines()[0][:30] if v else "",
)
def test_every_block_parses(page: str, lang: str, body: str) -> None:
    CHECKS[lang](body)


def _python_runnable() -> list[str]:
    return [
        body
        for _, lang, kind, _, body in _BLOCKS
        if lang == "python" and kind == "run" and not re.match(r"# [\w/.-]+\.py\n", body)
    ]


@pytest.mark.parametrize("body", _python_runnable(), ids=lambda b: b.splitlines()[0][:40])
def test_a_python_block_runs_as_written(workdir: Path, body: str) -> None:
    done = _bash(f"{BIN / 'python'} - <<'PYTHON'\n{body}PYTHON\n", workdir)
    assert done.returncode == 0, done.stdout + done.stderr


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
    """The command's visible long options (an old spelling, hidden, is not documented)."""
    return {
        o: p
        for p in command.params
        if not getattr(p, "hidden", False)
        for o in getattr(p, "opts", [])
        if o.startswith("--")
    }


_SYNOPSES = [body for kind, _, body in _blocks() if kind == "synopsis"]


@pytest.mark.parametrize("body", _SYNOPSES, ids=lambda b: b[:30])
def test_synopsis_blocks_name_real_commands_and_options(body: str) -> None:
    for command, text in _described(body):
        options = _options(command)
        for option in re.findall(r"--[a-z0-9-]+", text):
            assert option in options, f"{text}: {command.name} has no {option}"


def test_a_command_with_a_synopsis_lists_every_option_and_choice() -> None:
    """A command shown with options in some synopsis shows all of them (across the site's
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
    """The labels how-to's "EU and general refund pages" figure is their exact word-3-shingle
    Jaccard."""
    from retrieval_eval.lint.minhash import ShingleSets, jaccard
    from retrieval_eval.lint.signature_cache import SHINGLE_WORDS
    from retrieval_eval.retrievers.corpus import read_corpus

    documents = {d.id: d.content for d in read_corpus(ROOT / "examples" / "corpus")}
    pages = [documents["billing/refunds.md"], documents["billing/refunds-eu.md"]]
    shingles = ShingleSets.from_texts(pages, SHINGLE_WORDS)
    similarity = jaccard(shingles.shingles(0), shingles.shingles(1))
    text = " ".join((ROOT / "docs" / "how-to" / "labels.md").read_text(encoding="utf-8").split())
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
    for topic in ("runs list", "dashboard", "three lines"):
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
    assert " runs list handbook.demo handbook_bm25 " in history
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
