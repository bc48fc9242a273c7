"""The cyclic garbage collector held back around bulk work: :func:`paused_gc` while building many
acyclic objects (results, loaded questions, compared rankings), :func:`young_collections_only`
around a long loop calling user code. Loading a set, scoring a run and comparing replays use it.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector around bulk, acyclic allocation (no user code inside).

    Building 100,000 results triggers full collections that walk every live object and cost
    more than the work itself; reference counting still frees everything at once. What the
    block kept then goes straight to the oldest generation (``gc.freeze`` and ``gc.unfreeze``
    move whole lists), where surviving the young collections would take it: walking it there,
    as re-enabling would at the next allocation, finds no garbage in acyclic objects. Not while
    objects are frozen (a forking server's), whose freeze that would undo. The collector is
    re-enabled afterwards only when it was enabled before.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if not gc.get_freeze_count():
            gc.freeze()
            gc.unfreeze()
        if enabled:
            gc.enable()


@contextmanager
def young_collections_only() -> Iterator[None]:
    """Defer the collector's full collections around a long loop that calls user code (a
    retriever) and keeps a small result per call.

    The young generations still collect, so the cyclic garbage a call leaves (an exception and
    its traceback) is freed as it is made; only the sweeps of the whole long-lived heap, which a
    growing list of results keeps triggering, wait until the block ends. The thresholds are
    restored afterwards.
    """
    thresholds = gc.get_threshold()
    gc.set_threshold(thresholds[0], thresholds[1], 2**31 - 1)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
