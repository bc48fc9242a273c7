"""Files a user keeps, written whole or not at all (:mod:`retrieval_eval.safety.files`) on a real
tmpfs filled to the last byte or remounted read-only: the old file is left byte for byte, no
temporary file is left behind, exit 2 with one line naming the real path, why and the fix."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from helpers import EXAMPLES, fill, read_only, tmpfs

from cli.test_cli_core import invoke, isolate_env
from retrieval_eval import load_golden_set
from retrieval_eval.golden.models import GoldenQuestion, GoldenQuestionSet
from retrieval_eval.labels.judgments import Judgment, write_judgments
from retrieval_eval.safety.files import FileWriteError, write_file

CONFIG = str(EXAMPLES / "retrieval_eval.yaml")


def small_set() -> GoldenQuestionSet:
    questions = [
        GoldenQuestion(
            id=f"q{i}", question=f"question {i}?", form="match", expected_document_ids=(f"d{i}",)
        )
        for i in range(40)
    ]
    return GoldenQuestionSet(identifier="small", questions=questions)


def set_files(folder: Path, config_folder: Path, rows: list[Judgment]) -> tuple[Path, Path, Path]:
    """A set file in ``folder``, its config and a judgments file in ``config_folder``."""
    set_file = folder / "small.yaml"
    set_file.write_text(yaml.safe_dump(small_set().model_dump(mode="json", exclude_none=True)))
    config = config_folder / "retrieval_eval.yaml"
    config.write_text(yaml.safe_dump({"sets": [str(set_file)]}))
    judgments = config_folder / "judged.jsonl"
    write_judgments(rows, judgments)
    return set_file, config, judgments


@pytest.fixture
def disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    isolate_env(monkeypatch, tmp_path)
    with tmpfs(tmp_path / "disk", size="64k") as folder:
        yield folder


@pytest.mark.parametrize("fault", ["full", "read-only"])
def test_promote_onto_a_broken_disk_leaves_the_set_file_as_it_was(
    disk: Path, tmp_path: Path, fault: str
) -> None:
    rows = [Judgment(question_id="q1", document_id="new-doc", grade=2, rater="ann")]
    set_file, config, judgments = set_files(disk, tmp_path, rows)
    before = set_file.read_bytes()
    if fault == "full":
        fill(disk)
        why = "No space left on device): free some space on its disk, or write it elsewhere"
    else:
        read_only(disk)
        why = "Read-only file system): its file system is read-only: write it elsewhere"
    listed = sorted(os.listdir(disk))
    done = invoke(
        "sets", "promote", "small", "--judgments", str(judgments), "--config", str(config)
    )
    assert done.exit_code == 2, done.output
    # one line, naming the set's own file (no --output was given) and saying it is kept
    assert done.stderr == f"error: {set_file}: cannot write it ({why}; the file is unchanged\n"
    assert set_file.read_bytes() == before  # the set is whole: version 1, loads
    assert load_golden_set(set_file).version is None
    assert sorted(os.listdir(disk)) == listed  # no temporary file left behind


def test_an_export_over_a_file_on_a_full_disk_keeps_the_old_file(disk: Path) -> None:
    qrels = disk / "small.qrels"
    qrels.write_text("old 0 qrels 1\n")
    fill(disk)
    done = invoke("sets", "export-qrels", "handbook.demo", "--config", CONFIG, "-o", str(qrels))
    assert done.exit_code == 2, done.output
    assert done.stderr.startswith(f"error: --output {qrels}: cannot write it (No space left")
    assert done.stderr.endswith("; the file is unchanged\n")
    assert qrels.read_text() == "old 0 qrels 1\n"
    assert sorted(os.listdir(disk)) == ["filler", "small.qrels"]


def test_a_new_file_on_a_full_disk_is_not_created_half_written(disk: Path) -> None:
    fill(disk)
    with pytest.raises(FileWriteError, match="No space left on device") as raised:
        write_file(disk / "new.yaml", "x" * 10_000)
    assert raised.value.exit_code == 2 and not raised.value.unchanged
    assert os.listdir(disk) == ["filler"]


def test_the_file_keeps_its_mode_and_a_link_keeps_pointing_at_it(tmp_path: Path) -> None:
    real = tmp_path / "real.yaml"
    real.write_text("old\n")
    real.chmod(0o640)
    link = tmp_path / "link.yaml"
    link.symlink_to(real)
    write_file(link, "new\n")
    assert link.is_symlink() and real.read_text() == "new\n"
    assert real.stat().st_mode & 0o777 == 0o640
    fresh = write_file(tmp_path / "fresh.txt", "x")
    umask = os.umask(0)
    os.umask(umask)
    assert fresh.stat().st_mode & 0o777 == 0o666 & ~umask  # as open() would make it
