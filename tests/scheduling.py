"""How ``make test`` spreads the modules over its two xdist workers (hooks re-exported by conftest).

xdist's ``--dist loadscope`` keeps a module on one worker (its module-scoped fixtures run once)
and hands modules out by how many tests they hold. The test count says little about time here:
the two real Airflow deployments are two tests and ~110 s, so they were handed out last and ran
alone while the other worker sat idle (``--durations``: 283 s of work on one worker, 200 s on
the other). Two changes, both measured:

- **Costliest first.** The modules in ``COSTLIEST`` (slowest in CI's ``--durations=15``, in that
  order) come first, then the rest by test count as xdist would order them.
- **ranx in one module.** Only ``tests/agreement/test_ranx.py`` calls ranx (the other agreement
  tests read its stored figures), in a process of its own with numba's JIT off.

Without xdist (``pytest`` alone, ``-p no:xdist``) only the order applies, a module at a time.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

COSTLIEST = [
    "tests/airflow/test_deployment.py",
    "tests/airflow/test_deployment_celery.py",
    "tests/airflow/test_dag_runs.py",
    "tests/airflow/test_labelling_dag.py",
    "tests/webui/test_screenshots.py",
    "tests/airflow/test_python_retriever.py",
    "tests/webui/test_browser.py",
    "tests/airflow/test_connections.py",
    "tests/test_docs.py",
    "tests/workflows/test_leaderboard.py",
    "tests/evaluation/test_scoring.py",
    "tests/airflow/test_manual_depths.py",
    "tests/store/test_serialised_judging.py",
    "tests/agreement/test_ranx.py",
]


def scope_of(nodeid: str) -> str:
    """The unit a worker runs whole: a module (a class with its own scope stays in it)."""
    return nodeid.split("::", 1)[0]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Modules costliest first; a module's own order is untouched."""
    scopes = [scope_of(item.nodeid) for item in items]
    sizes = Counter(scopes)
    first_seen: dict[str, int] = {}
    for index, scope in enumerate(scopes):
        first_seen.setdefault(scope, index)

    def key(index: int) -> tuple[int, int, int, int]:
        scope = scopes[index]
        rank = (0, COSTLIEST.index(scope)) if scope in COSTLIEST else (1, -sizes[scope])
        return (*rank, first_seen[scope], index)  # a scope stays whole, in its own order

    items[:] = [items[i] for i in sorted(range(len(items)), key=key)]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadscope`` by module, in collection order (set just above)."""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class CostliestFirst(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

    config.option.loadscopereorder = False  # the order is the collection's, set above
    return CostliestFirst(config, log)
