"""One place that knows every available golden set: config files, directories, installed packages.

Installed packages provide sets through the ``retrieval_eval.golden_question_sets`` entry-point
group; each entry point is a callable returning an iterable of :class:`GoldenQuestionSet`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from importlib.metadata import entry_points
from pathlib import Path

from retrieval_eval.errors import GoldenSetError, InvalidInputError, UnknownNameError
from retrieval_eval.golden.loaders import SET_SUFFIXES, load_golden_set
from retrieval_eval.golden.models import GoldenQuestionSet
from retrieval_eval.safety.limits import quote
from retrieval_eval.safety.suggest import did_you_mean

ENTRY_POINT_GROUP = "retrieval_eval.golden_question_sets"


class GoldenSetRegistry:
    """Sets by identifier, each remembering where it came from (for duplicate errors)."""

    def __init__(self, missing_config: str = "") -> None:
        self._sets: dict[str, tuple[GoldenQuestionSet, str]] = {}
        # where a config was looked for when none was found, for "unknown golden set"
        self.missing_config = missing_config

    def add(self, golden_set: GoldenQuestionSet, source: str) -> None:
        """Register one set; a second set with the same identifier is an error naming both."""
        known = self._sets.get(golden_set.identifier)
        if known is not None:
            raise InvalidInputError(
                f"duplicate golden set identifier {golden_set.identifier!r}: defined by "
                f"{known[1]} and by {source}; rename one of them"
            )
        self._sets[golden_set.identifier] = (golden_set, source)

    def add_file(self, path: Path, identifier: str | None = None) -> GoldenQuestionSet:
        golden_set = load_golden_set(path, identifier=identifier)
        self.add(golden_set, str(path))
        return golden_set

    def add_directory(self, directory: Path) -> None:
        """Register every set file directly inside ``directory`` (all problems reported at once)."""
        if not directory.is_dir():
            raise InvalidInputError(f"golden set directory {directory} does not exist")
        problems: list[str] = []
        for path in sorted(directory.iterdir()):
            if path.suffix.lower() in SET_SUFFIXES and path.is_file():
                try:
                    self.add_file(path)
                except GoldenSetError as exc:
                    problems.extend(exc.problems)
        if problems:
            raise GoldenSetError(problems)

    def add_entry_points(self, loader: Callable[[], Iterable[object]] | None = None) -> None:
        """Register the sets that installed packages provide through entry points."""
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            source = f"entry point {ep.name!r} ({ep.value})"
            try:
                provided = list(ep.load()())
            except Exception as exc:
                raise InvalidInputError(f"{source} failed to provide golden sets: {exc}") from exc
            for golden_set in provided:
                if not isinstance(golden_set, GoldenQuestionSet):
                    raise InvalidInputError(
                        f"{source} returned {type(golden_set).__name__}, not a GoldenQuestionSet"
                    )
                self.add(golden_set, source)

    def names(self) -> list[str]:
        return sorted(self._sets)

    def source(self, identifier: str) -> str:
        return self._sets[identifier][1]

    def get(self, identifier: str) -> GoldenQuestionSet:
        try:
            return self._sets[identifier][0]
        except KeyError:
            available = ", ".join(self.names()) or "none (add 'sets:' to the config file)"
            where = f"; {self.missing_config}" if self.missing_config else ""
            raise UnknownNameError(
                f"unknown golden set {quote(identifier)}{did_you_mean(identifier, self.names())}"
                f"; available: {available}{where}"
            ) from None

    def __contains__(self, identifier: object) -> bool:
        return identifier in self._sets

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self._sets[name][0] for name in self.names())
