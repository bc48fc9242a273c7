"""examples/README.md's reference table against real runs of the demo retriever.

The "120/20 chunks" columns are the shipped config (what ``make demo`` prints), the "whole
pages" columns the same config without chunking. Every figure of the table is checked, to the
printed decimal, so a change of corpus, labels or retriever that moves one fails here until the
README says the new figure.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from retrieval_eval.config.models import load_config
from retrieval_eval.evaluation.results import RunResult
from retrieval_eval.evaluation.scoring import evaluate
from retrieval_eval.workflows.labelled_run import opened_retriever, resolve_set, resolve_settings

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
ROW = re.compile(r"^\| (?P<slice>[^|]+?) \| (?P<n>\d+) \|(?P<cells>( [\d.]+% \|){4})$")


def _table() -> dict[str, tuple[int, list[str]]]:
    rows = {}
    for line in (EXAMPLES / "README.md").read_text(encoding="utf-8").splitlines():
        match = ROW.match(line)
        if match:
            cells = [c.strip() for c in match["cells"].strip(" |").split("|")]
            rows[match["slice"]] = (int(match["n"]), cells)
    return rows


def _run(tmp_path: Path, chunked: bool) -> RunResult:
    config_data: dict[str, Any] = yaml.safe_load((EXAMPLES / "retrieval_eval.yaml").read_text())
    options = config_data["retrievers"]["handbook_bm25"]
    if not chunked:
        options.pop("chunk_size")
        options.pop("chunk_overlap")
    options["corpus"] = str(EXAMPLES / "corpus")
    config_data["sets"] = [str(EXAMPLES / "golden" / "handbook.yaml")]
    path = tmp_path / ("chunked.yaml" if chunked else "whole.yaml")
    path.write_text(yaml.safe_dump(config_data))
    config = load_config(path)
    golden = resolve_set(config, "handbook.demo")
    with opened_retriever(config, "handbook_bm25") as retriever:
        return evaluate(
            golden, retriever, resolve_settings(config, golden.identifier, "handbook_bm25")
        )


def _slices(result: RunResult) -> dict[str, tuple[int, float | None, float | None]]:
    rows = {"overall": (result.question_count, result.top1_hit_rate, result.top3_hit_rate)}
    for name, s in result.by_form.items():
        rows[f"form = {name}"] = (s.questions, s.top1_hit_rate, s.top3_hit_rate)
    for name, s in result.by_hard_class.items():
        rows[name] = (s.questions, s.top1_hit_rate, s.top3_hit_rate)
    classless = [q for q in result.questions if not q.hard_class]
    rows["(no hard_class)"] = (
        len(classless),
        sum(q.top1_hit for q in classless) / len(classless),
        sum(q.top3_hit for q in classless) / len(classless),
    )
    return rows


@pytest.mark.parametrize("chunked", [False, True], ids=["whole pages", "120/20 chunks"])
def test_the_reference_table_matches_a_real_run(tmp_path: Path, chunked: bool) -> None:
    table = _table()
    measured = _slices(_run(tmp_path, chunked))
    assert set(table) == set(measured), "the table lists every slice the run has, no other"
    for name, (n, top1, top3) in measured.items():
        printed_n, cells = table[name]
        printed = cells[2:] if chunked else cells[:2]
        assert printed_n == n, name
        assert top1 is not None and top3 is not None
        assert printed == [f"{top1:.1%}", f"{top3:.1%}"], name
