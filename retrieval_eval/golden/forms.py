"""The two question forms, apart from the set models: a stored run's results need the forms
but not the models and validators of a golden set (``show`` builds no ``GoldenQuestion``)."""

from __future__ import annotations

from enum import StrEnum


class QuestionForm(StrEnum):
    """How a question relates to its target's wording.

    ``match`` shares vocabulary with its target; ``gap`` is an everyday rewording with little
    overlap. Parsed case-insensitively (``"GAP"`` is ``gap``).
    """

    MATCH = "match"
    GAP = "gap"

    @classmethod
    def _missing_(cls, value: object) -> QuestionForm | None:
        if isinstance(value, str):
            lowered = value.strip().lower()
            for member in cls:
                if member.value == lowered:
                    return member
        return None
