"""The queries a replay moved most, as candidates to judge: a judgments file (JSONL) with one row
per (query, document of either ranking), grades empty, that ``sets judge import`` reads once
people have filled the grades in. Queries appear in their stored form."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from retrieval_eval.replay.pipeline import ReplayOutcome


def draft_rows(outcome: ReplayOutcome, most: int = 50) -> list[dict[str, object]]:
    where = f"replay {outcome.replay_id}" if outcome.replay_id else f"replay {outcome.run_key[:8]}"
    rows: list[dict[str, object]] = []
    for change in outcome.comparison.most_changed(most):
        ranks: dict[str, list[str]] = {}
        for label, ids in (("before", change.before), ("after", change.after)):
            for rank, doc in enumerate(ids, start=1):
                ranks.setdefault(doc, []).append(f"{label} #{rank}")
        for doc, seen in ranks.items():
            rows.append(
                {
                    "question_id": None,
                    "question": change.text,
                    "document_id": doc,
                    "grade": None,
                    "rater": None,
                    "time": None,
                    "note": None,
                    "source": f"{where} of {outcome.sample_name} by {outcome.retriever}: "
                    + ", ".join(seen),
                }
            )
    return rows


def write_draft(outcome: ReplayOutcome, path: Path, most: int = 50) -> int:
    """Write the candidates as a judgments file, JSONL or CSV by the path's suffix; returns how
    many rows."""
    from retrieval_eval.golden.judgments import write_records

    return write_records(draft_rows(outcome, most), path)
