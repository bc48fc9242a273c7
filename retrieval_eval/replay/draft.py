"""The queries a replay moved most, as candidates to judge: a judgments file (JSONL) with one row
per (query, document of either ranking), grades empty, that ``sets judge import`` reads once
people have filled the grades in. Queries appear in their stored form, or as captured (read from
the log again) when the user asks for it: a hashed sample's ``#…`` cannot be graded."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from retrieval_eval.replay.record import ReplayRecord


def refuse_hashed(privacy: str, sample: str, flag: str) -> None:
    """A draft of a ``hashed`` sample in its stored form is refused: nobody can grade ``#…``;
    ``flag`` writes the queries as captured instead."""
    if privacy == "hashed":
        from retrieval_eval.errors import InvalidInputError

        raise InvalidInputError(
            f"sample {sample!r} is stored hashed: a draft would show '#…' for every query, "
            f"which nobody can grade; add {flag} to write the queries as captured (read from the "
            "log again: the file then holds what users typed)"
        )


def draft_rows(
    outcome: ReplayRecord, most: int = 50, texts: Mapping[str, str] | None = None
) -> list[dict[str, object]]:
    """A row per (moved query, document); the question is ``texts[key]`` when given (the
    captured texts), else the stored form."""
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
                    "question": texts[change.key] if texts is not None else change.text,
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


def write_draft(
    outcome: ReplayRecord, path: Path, most: int = 50, texts: Mapping[str, str] | None = None
) -> int:
    """Write the candidates as a judgments file, JSONL or CSV by the path's suffix; returns how
    many rows."""
    from retrieval_eval.labels.judgments import write_records

    return write_records(draft_rows(outcome, most, texts), path)
