"""Dead labels: expected document ids that no longer exist in the index a retriever searches.

After an index rebuild a labelled document may be gone (renamed, merged, dropped). A question
whose every target is gone cannot be answered by any retriever, so a miss on it says nothing
about retrieval: it is a *stale label*, reported as such and left out of the regression
judgement (see :mod:`retrieval_eval.verdicts.regression`).

The check asks the retriever's optional ``existing_ids(ids) -> set[str]`` capability (see
:mod:`retrieval_eval.retrievers.base`) once, with every distinct expected id of the set. A
retriever without it cannot be checked: the answer says ``checked=False`` and nothing is dead.

Edge cases:

- A question with no targets (a "nothing answers this" question) is never stale.
- A question some of whose targets are dead is *partly dead*: still judged (a surviving target
  can be found), but listed so the labels can be fixed.
- ``existing_ids`` may answer with ids it was not asked about; only asked ids count.
- An adapter whose check is best effort (``run_file``: ids seen in the file) says so in
  ``source``; its dead ids are "never seen", not "certainly deleted".
- :func:`attach_dead_labels` (what ``retrieval-eval run`` and the Python API use) never fails a
  run: a lookup that raises (an HTTP lookup endpoint down) is recorded as ``checked=False`` with
  the redacted error in ``source``, and the run is judged as if it had no capability.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from retrieval_eval.safety.surrogates import escaped

if TYPE_CHECKING:  # annotations only: a stored run's results need no set models
    from retrieval_eval.evaluation.results import RunResult
    from retrieval_eval.golden.models import GoldenQuestionSet


class DeadLabels(BaseModel):
    """What the check found; ``checked=False`` when the retriever cannot check ids."""

    model_config = ConfigDict(defer_build=True)  # schema built at first use, not at import

    checked: bool
    source: str = ""
    dead_ids: list[str] = Field(default_factory=list)
    stale_questions: list[str] = Field(default_factory=list)
    partly_dead: dict[str, list[str]] = Field(default_factory=dict)

    @property
    def found(self) -> bool:
        """True when any expected id is dead."""
        return bool(self.dead_ids)

    def summary(self) -> str:
        """One line for logs and alerts."""
        if not self.checked:
            return "dead labels not checked (the retriever cannot look ids up)"
        if not self.dead_ids:
            return f"no dead labels ({source_text(self.source)})"
        n = len(self.dead_ids)
        return (
            f"labels need attention: {n} id{'s' if n != 1 else ''} no longer in the index "
            f"({len(self.stale_questions)} stale question"
            f"{'s' if len(self.stale_questions) != 1 else ''}, "
            f"{len(self.partly_dead)} partly dead; {source_text(self.source)})"
        )


# what user text says of a retriever that does not name how it checks ids
DEFAULT_SOURCE = "reported by the retriever"
# the placeholder runs stored before DEFAULT_SOURCE carry: an internal name, never shown
_LEGACY_SOURCE = "index"


def source_text(source: str) -> str:
    """How a stored check looked ids up, as user text says it (a run stored with no source, or
    with the old internal placeholder, says :data:`DEFAULT_SOURCE`)."""
    return DEFAULT_SOURCE if source in ("", _LEGACY_SOURCE) else source


def label_source(retriever: Any) -> str:
    """How the retriever checks ids (its ``existing_ids_source``, else :data:`DEFAULT_SOURCE`)."""
    return escaped(str(getattr(retriever, "existing_ids_source", "") or DEFAULT_SOURCE))


def can_check_labels(retriever: Any) -> bool:
    """True when the retriever offers ``existing_ids``."""
    return callable(getattr(retriever, "existing_ids", None))


def find_dead_labels(golden_set: GoldenQuestionSet, retriever: Any) -> DeadLabels:
    """Ask the retriever once which of the set's expected ids exist; classify the questions."""
    if not can_check_labels(retriever):
        return DeadLabels(checked=False, source="not supported by this retriever")
    wanted = sorted({d for q in golden_set.questions for d in q.targets()})
    existing = set(retriever.existing_ids(wanted)) if wanted else set()
    return classify(golden_set, (d for d in wanted if d not in existing), label_source(retriever))


def classify(golden_set: GoldenQuestionSet, dead: Iterable[str], source: str) -> DeadLabels:
    """Stale and partly dead questions for a known set of dead ids."""
    dead_set = set(dead)
    stale: list[str] = []
    partly: dict[str, list[str]] = {}
    for question in golden_set.questions:
        targets = question.targets()
        gone = sorted({d for d in targets if d in dead_set})
        if not gone:
            continue
        if len(gone) == len(set(targets)):
            stale.append(question.id)
        else:
            partly[question.id] = gone
    return DeadLabels(
        checked=True,
        source=source,
        dead_ids=sorted(dead_set),
        stale_questions=stale,
        partly_dead=partly,
    )


def dead_labels_or_failure(golden_set: GoldenQuestionSet, retriever: Any) -> DeadLabels:
    """:func:`find_dead_labels`, with a failing lookup recorded as ``checked=False`` (its error,
    redacted, in ``source``) instead of raised: the check is advice and never fails a run."""
    try:
        return find_dead_labels(golden_set, retriever)
    except Exception as exc:
        from retrieval_eval.safety.redaction import redact

        # escaped: the text is stored with the run and shown by every later command
        text = escaped(redact(f"check failed: {type(exc).__name__}: {exc}"))
        return DeadLabels(checked=False, source=text[:300])


def attach_dead_labels(
    result: RunResult, golden_set: GoldenQuestionSet, retriever: Any
) -> RunResult:
    """``result`` with the check's answer as ``dead_labels`` (unchanged without the capability)."""
    if not can_check_labels(retriever):
        return result
    return result.model_copy(update={"dead_labels": dead_labels_or_failure(golden_set, retriever)})
