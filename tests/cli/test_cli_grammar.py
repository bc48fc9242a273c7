"""One CLI grammar: the stored-run verbs under ``runs``, ``--limit`` for every count, ``-o`` for
every file written, no one-letter long option; and every old spelling (``history``,
``export-run``, ``--most``, ``--k``...) still runs the new one, with the same stdout and exit
code and one note on stderr (:mod:`retrieval_eval.cli.aliases`). In-process through click, on
the demo config with real SQLite stores."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner, Result

from cli.replay_configs import CORPUS, LOG, write_config
from retrieval_eval.cli import cli

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ["--config", str(ROOT / "examples" / "retrieval_eval.yaml")]
SWITCH = "cli.store_retrievers:switchable"


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def timeless(table: str) -> list[dict[str, str]]:
    """A CSV report's rows without the latency column, the one figure two runs differ in."""
    return [
        {k: v for k, v in row.items() if "latency" not in k}
        for row in csv.DictReader(io.StringIO(table))
    ]


def notes(result: Result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("note: ")]


def commands(group: click.Group = cli, path: tuple[str, ...] = ()) -> Iterator[Any]:
    """(path, command, hidden) for every command of the tree, hidden ones included."""
    for name, command in group.commands.items():
        yield (*path, name), command, command.hidden
        if isinstance(command, click.Group):
            yield from commands(command, (*path, name))


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A store with two runs of the demo set: a perfect one, then a regression (run 2)."""
    monkeypatch.setenv("RETRIEVAL_EVAL_HOME", str(tmp_path / "home"))
    for name in ("RETRIEVAL_EVAL_DB", "RETRIEVAL_EVAL_CONFIG", "GITHUB_STEP_SUMMARY"):
        monkeypatch.delenv(name, raising=False)
    url = f"sqlite:///{tmp_path / 'results.sqlite'}"
    for mode in ("perfect", "worse"):
        monkeypatch.setenv("STORE_CLI_MODE", mode)
        assert invoke("run", "handbook.demo", SWITCH, *CONFIG, "--db", url).exit_code in (0, 1)
    return url


RENAMED_COMMANDS = [
    (["history", "handbook.demo", SWITCH], ["runs", "list", "handbook.demo", SWITCH]),
    (["history", "nope", SWITCH], ["runs", "list", "nope", SWITCH]),
    (["show", "2", "--format", "json"], ["runs", "show", "2", "--format", "json"]),
    (["show", "99"], ["runs", "show", "99"]),
    (["report", "1", "--html", "-"], ["runs", "report", "1"]),
    (["export-run", "1"], ["runs", "export", "1"]),
    (["prune", "--older-than", "3650"], ["runs", "prune", "--older-than", "3650"]),
    (["baseline", "accept", "2"], ["runs", "accept", "2"]),
    (["db", "replay"], ["db", "flush"]),  # re-saving spooled runs: `replay` replays queries
]
NOTES = {
    "history": "note: `history` is now `runs list`",
    "show": "note: `show` is now `runs show`",
    "report": "note: `report` is now `runs report`",
    "export-run": "note: `export-run` is now `runs export`",
    "prune": "note: `prune` is now `runs prune`",
    "baseline": "note: `accept` is now `runs accept`",
    "db": "note: `db replay` is now `db flush`",
}


@pytest.mark.parametrize(("old", "new"), RENAMED_COMMANDS, ids=lambda v: " ".join(v))
def test_an_old_command_runs_the_new_one_and_says_so_once(
    db: str, old: list[str], new: list[str]
) -> None:
    fresh = invoke(*new, *CONFIG, "--db", db)
    kept = invoke(*old, *CONFIG, "--db", db)  # after: prune and accept are done twice alike
    assert kept.exit_code == fresh.exit_code
    assert kept.stdout == fresh.stdout
    assert kept.stdout or kept.exit_code == 2  # the unknown set and run: exit 2, on stderr
    assert notes(fresh) == []
    assert notes(kept).count(NOTES[old[0]]) == 1
    assert len(notes(kept)) == len(set(notes(kept)))  # each note once (`--html` has its own)
    errors = [line for line in kept.stderr.splitlines() if not line.startswith("note: ")]
    assert errors == fresh.stderr.splitlines()


def test_report_html_file_is_now_runs_report_output(db: str, tmp_path: Path) -> None:
    old, new = tmp_path / "old.html", tmp_path / "new.html"
    kept = invoke("report", "2", "--html", str(old), *CONFIG, "--db", db)
    fresh = invoke("runs", "report", "2", "-o", str(new), *CONFIG, "--db", db)
    assert kept.exit_code == fresh.exit_code == 0
    assert old.read_bytes() == new.read_bytes() and b"<html" in new.read_bytes()
    assert notes(kept) == [  # the option's, as the command line is read; then the command's
        "note: `--html` is now `-o/--output`",
        "note: `report` is now `runs report`",
    ]


def test_run_k_is_now_cutoffs(db: str) -> None:
    base = ["run", "handbook.demo", SWITCH, *CONFIG, "--db", db, "--no-save", "--format", "csv"]
    fresh = invoke(*base, "--cutoffs", "1,5")
    kept = invoke(*base, "--k", "1,5")
    assert kept.exit_code == fresh.exit_code and "ndcg@5" in fresh.stdout
    assert timeless(kept.stdout) == timeless(fresh.stdout)
    assert notes(kept) == ["note: `--k` is now `--cutoffs`"] and notes(fresh) == []
    bad = invoke(*base, "--k", "0")
    assert bad.exit_code == 2 and "cutoffs must be positive integers" in bad.stderr


@pytest.fixture
def replay_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    data = {
        "store": f"sqlite:///{tmp_path / 'store.sqlite'}",
        "retrievers": {
            "bm25": {"type": "lexical", "corpus": CORPUS},
            "bm25_flat": {"type": "lexical", "corpus": CORPUS, "k1": 0.3, "b": 0.1},
        },
        "samples": {"top10": {"source": {"path": LOG}, "method": "top", "size": 10}},
    }
    return write_config(tmp_path, monkeypatch, data)


def test_replay_and_pool_old_options(replay_config: Path) -> None:
    def replay(*options: str) -> Result:
        return invoke(
            "replay", "top10", "bm25", "--against", "bm25_flat", "--no-save",
            "--format", "json", "--config", str(replay_config), *options,
        )  # fmt: skip

    fresh = replay("--depth", "5", "--persistence", "0.8", "--limit", "2")
    kept = replay("--k", "5", "--p", "0.8", "--most", "2")
    assert fresh.exit_code == kept.exit_code == 0, fresh.output
    doc = json.loads(fresh.stdout)
    assert len(doc["most_changed"]) == 2
    drop = ("run_key",)  # a random id per replay
    assert {k: v for k, v in json.loads(kept.stdout).items() if k not in drop} == {
        k: v for k, v in doc.items() if k not in drop
    }
    assert notes(kept) == [
        "note: `--k` is now `--depth`",
        "note: `--p` is now `--persistence`",
        "note: `--most` is now `--limit`",
    ]
    both = replay("--limit", "1", "--most", "3")  # the one given last on the line wins
    assert len(json.loads(both.stdout)["most_changed"]) == 3
    assert replay("--most", "-1").exit_code == 2

    assert invoke("replay", "top10", "bm25", "--config", str(replay_config)).exit_code == 0
    handbook = str(ROOT / "examples" / "golden" / "handbook.yaml")
    pool = ["sets", "pool", handbook, "--retrievers", "bm25", "--fresh", "--no-lint"]
    pool += ["--replay", "1", "--no-texts", "--config", str(replay_config)]
    fresh, kept = invoke(*pool, "--limit", "3"), invoke(*pool, "--most", "3")
    assert fresh.exit_code == kept.exit_code and fresh.stdout == kept.stdout
    assert notes(kept) == ["note: `--most` is now `--limit`"]


def test_help_and_reference_list_only_the_new_spellings() -> None:
    top = invoke("--help").stdout
    for old in ("history", "show", "report", "export-run", "prune", "baseline"):
        assert f"\n  {old} " not in top
    assert "\n  runs " in top
    for path, command, hidden in commands():
        if hidden:
            continue
        text = invoke(*path, "--help").stdout
        for option in command.params:
            if isinstance(option, click.Option) and option.hidden:
                assert not any(f"{name} " in text for name in option.opts), (path, option.opts)


def test_no_long_option_is_one_letter_and_every_count_is_limit() -> None:
    for path, command, hidden in commands():
        if hidden or isinstance(command, click.Group):
            continue
        for option in command.params:
            if not isinstance(option, click.Option) or option.hidden:
                continue
            longs = [name for name in option.opts if name.startswith("--")]
            assert all(len(name) > 3 for name in longs), (path, option.opts)
            if (option.help or "").startswith("How many"):
                assert longs == ["--limit"], (path, option.opts)
            assert not {"--most", "--top", "--count", "--html"} & set(longs), (path, option.opts)


def test_every_file_written_is_o_output() -> None:
    for path, command, _ in commands():
        for option in command.params:
            if isinstance(option, click.Option) and "--output" in option.opts:
                assert "-o" in option.opts, path


def test_every_report_command_takes_o_output() -> None:
    """A command that prints a report can write it to a file instead: `-o/--output` everywhere."""
    reporting = {
        ("run",),
        ("replay",),
        ("compare",),
        ("runs", "show"),
        ("runs", "report"),
        ("runs", "export"),
        ("sets", "lint"),
    }
    having = {
        path
        for path, command, hidden in commands()
        if not hidden and any("--output" in getattr(o, "opts", ()) for o in command.params)
    }
    assert reporting <= having, reporting - having


def test_o_writes_what_stdout_would_print(db: str, tmp_path: Path) -> None:
    """Each report command's `-o FILE` writes exactly what it prints on stdout, with the same
    exit code, and says on stderr where it went; a folder that does not exist is exit 2 before
    anything runs."""
    cases = [
        ["runs", "show", "2", "--format", "json", "--db", db],
        ["runs", "report", "1", "--db", db],
        ["compare", "--runs", "1,2", "--db", db],
        ["sets", "lint", "handbook.demo", *CONFIG, "--format", "json", "--db", db],
    ]
    for number, args in enumerate(cases):
        printed = invoke(*args)
        assert printed.exit_code in (0, 1) and printed.stdout, (args, printed.output)
        target = tmp_path / f"out{number}.txt"
        written = invoke(*args, "-o", str(target))
        assert written.exit_code == printed.exit_code, (args, written.output)
        assert written.stdout == "" and target.read_text(encoding="utf-8") == printed.stdout, args
        assert f"written to {target}" in written.stderr, args
        missing = tmp_path / "no-such-folder" / "out.txt"
        refused = invoke(*args, "-o", str(missing))
        assert refused.exit_code == 2 and f"--output {missing}: " in refused.stderr, args


def test_replay_o_writes_the_report(replay_config: Path, tmp_path: Path) -> None:
    target = tmp_path / "replay.md"
    args = ["replay", "top10", "bm25", "--no-save", "--format", "markdown"]
    done = invoke(*args, "--config", str(replay_config), "-o", str(target))
    assert done.exit_code == 0 and done.stdout == "", done.output
    assert target.read_text(encoding="utf-8").startswith("### FIRST REPLAY"), target.read_text()
    assert f"the replay's report written to {target}" in done.stderr
