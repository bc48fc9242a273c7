"""The error types a user can cause, each carrying the CLI exit code of its kind.

Exit codes (the README's table; the docs' exit codes page is generated from these classes):
0 success, 1 regression with ``--fail-on-regression``, 2 usage or invalid input, 3 an invalid run
or an unreachable store, 130 interrupted (Ctrl-C), 143 terminated (SIGTERM).
"""

from __future__ import annotations

import signal
from collections.abc import Sequence


class RetrievalEvalError(Exception):
    """Base class: a problem the user can fix, reported without a traceback."""

    exit_code = 2


class InvalidInputError(RetrievalEvalError):
    """A bad file, option or name: exit code 2."""

    exit_code = 2


class ConfigError(InvalidInputError):
    """The YAML config (or an option inside it) is invalid."""


class UnknownNameError(InvalidInputError):
    """A set or retriever name that no registry knows."""


class NoStoreError(InvalidInputError):
    """A command that only reads runs found no store (a missing SQLite file, a database without
    the tables): exit code 2, like an unknown run id. Read-only commands never create one."""


class GoldenSetError(InvalidInputError):
    """One or more problems in golden set files; ``problems`` lists every one of them."""

    def __init__(self, problems: Sequence[str]):
        self.problems = list(problems)
        count = len(self.problems)
        head = f"{count} problem{'s' if count != 1 else ''} in golden question set"
        super().__init__(head + ":\n" + "\n".join(f"  - {p}" for p in self.problems))


class SampleError(InvalidInputError):
    """Problems in a query log or a ``samples:`` entry; ``problems`` lists each, with its line."""

    def __init__(self, problems: Sequence[str]):
        self.problems = list(problems)
        count = len(self.problems)
        head = f"{count} problem{'s' if count != 1 else ''} in query sample"
        super().__init__(head + ":\n" + "\n".join(f"  - {p}" for p in self.problems))


class RetrieverError(RetrievalEvalError):
    """A retriever could not be built or configured (raised before any question runs)."""

    exit_code = 2


class InvalidRunError(RetrievalEvalError):
    """The run finished but cannot be trusted (too many retriever errors): exit code 3."""

    exit_code = 3


class StoreUnavailableError(RetrievalEvalError):
    """The result store cannot be reached: exit code 3. Messages never carry passwords."""

    exit_code = 3


class SourceUnavailableError(RetrievalEvalError):
    """A query log's database (a sample's SQL source) cannot be reached or did not answer
    within its timeout: exit code 3, as for the result store. Messages never carry passwords."""

    exit_code = 3


class StoreSchemaError(StoreUnavailableError):
    """The database holds a schema revision this version cannot use (exit 3; runs are spooled)."""


class StoreTooNewError(StoreSchemaError):
    """A newer retrieval-eval migrated the store (a revision no migration here knows): exit 2,
    upgrade the package; ``db upgrade`` cannot help (a run being recorded is still spooled)."""

    exit_code = 2


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread the way Ctrl-C raises KeyboardInterrupt (the CLI's
    handler, :mod:`retrieval_eval.cli.process`), so the same clean-up runs; exit code 143."""


class Interrupted(RetrievalEvalError):
    """A command stopped by Ctrl-C (SIGINT) or a KeyboardInterrupt, exit code 130, or by SIGTERM,
    143 (128 + the signal's number, what a shell reports for a process the signal ended); the
    message says what was and was not saved."""

    exit_code = 130

    @classmethod
    def by(cls, interrupt: KeyboardInterrupt, what: str) -> Interrupted:
        """The error for ``interrupt``: how the command was stopped, then ``what`` (a clause
        starting with "while", "before" or "after": what was and was not saved)."""
        if isinstance(interrupt, Terminated):
            error = cls(f"terminated by SIGTERM {what}")
            error.exit_code = 128 + signal.SIGTERM
            return error
        return cls(f"interrupted (Ctrl-C, SIGINT or a KeyboardInterrupt) {what}")
