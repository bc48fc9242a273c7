"""Promoting what a load allocated to the collector's oldest generation, unwalked.

The loader pauses the cyclic collector (``results.paused_gc``), but every object it allocates
is still queued as young: the first young collection after the pause walks all of them (and the
next middle-generation one walks them again), ~50 ms for 20,000 questions, to find no cycle (a
set is acyclic: refcounting frees it). ``gc.freeze()`` then ``gc.unfreeze()`` moves every
tracked object into the oldest generation in O(1) (two list splices) and restarts the young
count: the walks are skipped, and the objects stay collectable, at the next full collection,
like any object that survived two young ones. Nothing stays frozen.

Side effect, on purpose bounded: the caller's own young objects are promoted too, so cyclic
garbage the caller made just before the load waits for a full collection instead of a young
one. When something else froze objects (``gc.get_freeze_count()``: the CLI's ``run`` does, a
pre-fork server may), nothing is done: ``unfreeze`` would thaw what it froze.
"""

from __future__ import annotations

import gc


def promote_young_objects() -> None:
    """Move every young tracked object to the oldest generation, unless objects are frozen."""
    if gc.get_freeze_count():
        return
    gc.freeze()
    gc.unfreeze()
