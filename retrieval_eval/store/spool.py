"""The spool: runs the store could not take, kept as JSON files until ``db replay`` saves them.

One file per run, ``<run_key>.json`` in ``$RETRIEVAL_EVAL_HOME/spool`` by default, written
atomically (temporary file, then rename) so a crash never leaves half a run. A file holds the run,
the thresholds and any pinned baseline, so replaying judges the run exactly as ``run`` would have.
Files are listed oldest run first, so replayed runs chain baselines in the order they ran.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from retrieval_eval.config.models import Thresholds
from retrieval_eval.errors import InvalidInputError
from retrieval_eval.evaluation.results import RunResult
from retrieval_eval.safety.limits import quote
from retrieval_eval.store.url import home_dir

SPOOL_VERSION = 1


class SpooledRun(BaseModel):
    version: int = SPOOL_VERSION
    result: RunResult
    thresholds: Thresholds
    baseline_run_id: int | None = None


def default_spool_dir() -> Path:
    return home_dir() / "spool"


def write_spool(entry: SpooledRun, spool_dir: Path | None = None) -> Path:
    """Write one spooled run; return its path. Rewriting the same run replaces its file."""
    folder = spool_dir or default_spool_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{entry.result.run_key}.json"
    partial = path.with_name(path.name + ".partial")
    partial.write_text(entry.model_dump_json(indent=2), encoding="utf-8")
    os.replace(partial, path)
    return path


def read_spool(path: Path) -> SpooledRun:
    """Load one spool file; InvalidInputError names the file and what is wrong with it."""
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
        entry = SpooledRun.model_validate(data)
        # a hand-edited "\ud800" would pass validation and then fail the save: refuse it here
        json.dumps(data, ensure_ascii=False).encode("utf-8")
        return entry
    except UnicodeEncodeError as exc:
        char = quote(exc.object[exc.start : exc.end])
        raise InvalidInputError(
            f"{path}: not a readable spooled run (it holds a lone surrogate, {char}, which is "
            "not text); fix or remove the file, then run `retrieval-eval db replay` again"
        ) from None
    except (OSError, ValueError, ValidationError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InvalidInputError(
            f"{path}: not a readable spooled run ({first}); fix or remove the file, then run "
            "`retrieval-eval db replay` again"
        ) from None


def spooled_files(spool_dir: Path | None = None) -> list[tuple[Path, SpooledRun]]:
    """Every spooled run in a folder, oldest run first (an absent folder holds none)."""
    folder = spool_dir or default_spool_dir()
    if not folder.is_dir():
        return []
    entries = [(path, read_spool(path)) for path in sorted(folder.glob("*.json"))]
    return sorted(entries, key=lambda item: item[1].result.started_at)
