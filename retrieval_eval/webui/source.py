"""Which store and config the dashboard reads: the store opened lazily and read-only, the config
and its sets read again whenever a file they came from changes.

Without an explicit URL the dashboard reads the store the DAGs write: the config's
``airflow.store_connection_id`` (an Airflow connection) when set, else the usual lookup
(``$RETRIEVAL_EVAL_DB``, the config's ``store:``, the default SQLite file). The config is found as
everywhere else (``$RETRIEVAL_EVAL_CONFIG``, then ``retrieval_eval.yaml`` in the working folder).

Edge cases:

- The store is opened on the first request, not at import: the plugin is imported by every Airflow
  component, and an unreachable database must not stop the API server from starting.
- The dashboard reads through a read-only store; its one write, a judgment from the review
  queue, goes through :meth:`StoreSource.writer`, a second store on the same URL that writes
  nothing else. A SQLite file that does not exist is not created, and an empty database gets
  no schema; both read as "no runs yet" (``store()`` returns None, ``writer()`` too).
- A database at another schema revision raises StoreSchemaError (exit-3 kind, URL masked).
- The config and its sets are read on first use and again when the config file, a set file or a
  set folder changes (``sets promote`` writes the next version in place): :class:`ConfigSource`
  compares each file's modification time, change time and size (a stat() per file, per
  request), so pages follow the set's current version without a restart. A file that does not
  load (half written) is an error on that request; the next one reads it again.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from retrieval_eval.config.models import Config
    from retrieval_eval.store import Store

Stamp = tuple[tuple[str, int, int, int], ...]  # (path, mtime ns, ctime ns, size) per file


def configured_store_url() -> str:
    """The store URL the DAGs use, resolved the same way (see the module docstring)."""
    from retrieval_eval.config.models import load_config
    from retrieval_eval.store import store_url_for

    def connection_uri(connection_id: str) -> tuple[str, str]:
        from airflow.models.connection import Connection

        from retrieval_eval.airflow.hooks import connection_store

        return connection_store(Connection.get_connection_from_secrets(connection_id))

    config = load_config()
    return store_url_for(config, config.airflow.store_connection_id, connection_uri)


class StoreSource:
    """Opens the store on first use and keeps it; safe to share between request threads."""

    def __init__(self, url: str | None = None) -> None:
        self._explicit = url
        self._store: Store | None = None
        self._writer: Store | None = None
        self._url: str | None = None
        self._checked = False
        self._lock = threading.Lock()

    def store(self) -> Store | None:
        """The open store, or None while it holds no schema (nothing stored yet)."""
        if self._checked:
            return self._store
        with self._lock:
            if self._checked:
                return self._store
            from sqlalchemy.engine import make_url

            from retrieval_eval.store import Store, resolve_store_url
            from retrieval_eval.store.names import HEAD

            url = resolve_store_url(self._explicit) if self._explicit else configured_store_url()
            parsed = make_url(url)
            if parsed.get_backend_name() == "sqlite" and not Path(parsed.database or "").is_file():
                return None  # checked again next time: the first run may create it
            store = Store(url, read_only=True)
            revision = store.revision()
            if revision is None:
                store.close()
                return None
            if revision != HEAD:
                store.close()
                raise store.schema_error(revision)
            self._store, self._url, self._checked = store, url, True
            return store

    def writer(self) -> Store | None:
        """A store that can write, for the review queue's judgments; None while there is no
        store yet (nothing to review either)."""
        if self.store() is None:
            return None
        with self._lock:
            if self._writer is None:
                from retrieval_eval.store import Store

                assert self._url is not None
                self._writer = Store(self._url)
            return self._writer

    def close(self) -> None:
        with self._lock:
            for opened in (self._store, self._writer):
                if opened is not None:
                    opened.close()
            self._store, self._writer, self._checked = None, None, False


def _watched(config: Config) -> list[Path]:
    """The files the config and its sets were read from: the config file, each set file, each
    set folder (its time changes when a file is added or removed) and the set files in it."""
    from retrieval_eval.golden.loaders import SET_SUFFIXES

    found = [config.path] if config.path is not None else []
    for source in config.sets:
        if source.path is not None:
            found.append(config.resolve(source.path))
        elif source.directory is not None:
            folder = config.resolve(source.directory)
            found.append(folder)
            if folder.is_dir():
                found += sorted(p for p in folder.iterdir() if p.suffix.lower() in SET_SUFFIXES)
    return found


def _stamp(paths: list[Path]) -> Stamp:
    """Each path's modification time, change time and size; -1s for one that is gone."""
    stamps = []
    for path in paths:
        try:
            stat = path.stat()
        except OSError:
            stamps.append((str(path), -1, -1, -1))
        else:
            stamps.append((str(path), stat.st_mtime_ns, stat.st_ctime_ns, stat.st_size))
    return tuple(stamps)


class ConfigSource:
    """The config with its sets loaded, read again when a file it came from changed (see the
    module docstring); safe to share between request threads."""

    def __init__(self, path: str | Path | None = None) -> None:
        self._path = path
        self._config: Config | None = None
        self._files: list[Path] = []
        self._stamp: tuple[Path | None, Stamp] = (None, ())
        self._lock = threading.Lock()

    def config(self) -> Config:
        """The current config, its ``golden_sets`` already loaded; a file that does not load
        raises (ConfigError, GoldenSetError naming it) and is read again on the next call."""
        from retrieval_eval.config.lookup import find_config

        with self._lock:
            found = find_config(self._path)  # $RETRIEVAL_EVAL_CONFIG may name another file
            if self._config is not None and (found, _stamp(self._files)) == self._stamp:
                return self._config
            from retrieval_eval.config.models import load_config

            config = load_config(self._path)
            files = _watched(config)
            stamp = _stamp(files)  # before reading the sets: a write after it is seen next time
            config.golden_sets  # noqa: B018 (loaded here, under the stamp taken before)
            self._config, self._files, self._stamp = config, files, (found, stamp)
            return config
