"""What a task reads of the DAG run it is in, and the workflow it rebuilds from its job.

Every task of a workflow's DAG gets the same small job (JSON); :func:`bind` turns it into the
workflow with what this DAG run adds: for a labelled run, the manual run's Params (checked: a
bad one fails the task at once, naming the Param), the run key (the dashboard's link back to
the DAG run), the index build the triggering asset event names, when the DAG run started, and
the store (the Airflow connection when configured, else the usual lookup); for a replay, the
same run key, index build and store. A workflow with no binder here is built from its job
alone.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from retrieval_eval.errors import InvalidInputError

if TYPE_CHECKING:  # the workflows are imported by the tasks that run them, not by a DAG file
    from retrieval_eval.config.models import Config
    from retrieval_eval.workflows.base import Workflow

INDEX_VERSION_KEYS = ("index_version", "version", "build")


@contextlib.contextmanager
def bad_input_fails_at_once() -> Iterator[None]:
    """A bad set, config or name fails the task without retries: waiting will not fix a file.

    Everything else (an unreachable store or service, a timeout) raises as it is and retries.
    """
    from airflow.sdk.exceptions import AirflowFailException

    try:
        yield
    except InvalidInputError as exc:
        raise AirflowFailException(str(exc)) from None


def store_url(job: Mapping[str, Any], config: Config | None = None) -> str:
    """The store at run time: the Airflow connection when configured, else the usual lookup
    (``config``: the job's, when the caller has read it already)."""
    from airflow.sdk import BaseHook

    from retrieval_eval.airflow.hooks import connection_store
    from retrieval_eval.config.models import load_config
    from retrieval_eval.store import store_url_for

    return store_url_for(
        config if config is not None else load_config(job.get("config_path")),
        job.get("store_connection_id"),
        lambda conn_id: connection_store(BaseHook.get_connection(conn_id)),
    )


def index_version(events: Mapping[Any, Iterable[Any]] | None) -> str | None:
    """The index build that started this run: the newest triggering asset event's ``extra``
    (``index_version``, else ``version`` or ``build``), as
    :func:`~retrieval_eval.evaluation.results.index_version_text` keeps it; None for a
    scheduled or manual run (Airflow 3's ``triggering_asset_events`` is then empty), or when no
    event's extra names one. Labelled runs and replays read it the same way."""
    from retrieval_eval.evaluation.results import index_version_text

    def version(extra: Mapping[str, Any]) -> str | None:
        found = (index_version_text(extra.get(key)) for key in INDEX_VERSION_KEYS)
        return next((v for v in found if v is not None), None)

    return newest_extra(events, version)


def newest_extra(
    events: Mapping[Any, Iterable[Any]] | None, read: Callable[[Mapping[str, Any]], Any]
) -> Any:
    """What ``read`` finds in the newest triggering asset event's ``extra`` among the events
    where it finds something (not None); None if it finds nothing in any."""
    newest: tuple[Any, Any] | None = None
    for asset_events in (events or {}).values():
        for event in asset_events:
            value = read(getattr(event, "extra", None) or {})
            if value is None:
                continue
            stamp = getattr(event, "timestamp", None)
            if newest is None or (stamp is not None and (newest[0] is None or stamp >= newest[0])):
                newest = (stamp, value)
    return newest[1] if newest else None


def manual_overrides(params: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """A manual run's Params as a labelled run's overrides: ``{"run": {"depths": ...,
    "relevance_level": ...}, "thresholds": {"max_top1_drop": ..., "max_top5_drop": ...}}``
    (None: not given).

    ``depths`` is checked as ``run.depths`` is; ``max_drops`` maps a depth (``"5"``, as JSON
    keys are strings) to its largest allowed drop, 0 to 1. A bad value raises
    InvalidInputError naming the Param and the fix, so the run fails before any retrieval (the
    plan task checks them; a threshold for a depth the run does not gate fails there too).
    """
    from retrieval_eval.evaluation import MAX_DEPTH
    from retrieval_eval.evaluation.results import checked_depths

    depths = params.get("depths")
    if depths is not None:
        try:
            if not isinstance(depths, list):
                raise ValueError(f"expected a list of depths such as [1, 5], got {depths!r}")
            depths = checked_depths(depths)
        except ValueError as exc:
            raise InvalidInputError(f"Param depths: {exc}") from None
    drops: dict[str, Any] = {
        "max_top1_drop": params.get("max_top1_drop"),
        "max_top3_drop": params.get("max_top3_drop"),
    }
    given = params.get("max_drops") or {}
    if not isinstance(given, Mapping):
        raise InvalidInputError(
            f'Param max_drops: expected a mapping of depth to drop such as {{"5": 0.05}}, '
            f"got {given!r}"
        )
    for key, drop in given.items():
        depth = int(key) if str(key).isdigit() else None
        if depth is None or not 1 <= depth <= MAX_DEPTH:
            raise InvalidInputError(
                f"Param max_drops: {key!r} is not a depth; keys are whole numbers from 1 to "
                f'{MAX_DEPTH}, e.g. {{"5": 0.05}}'
            )
        if isinstance(drop, bool) or not isinstance(drop, int | float) or not 0 <= drop <= 1:
            raise InvalidInputError(
                f"Param max_drops: depth {depth}'s drop must be between 0 and 1 (an absolute "
                f"rate drop, 0.10 = ten points), got {drop!r}"
            )
        name = f"max_top{depth}_drop"
        if drops.get(name) is not None and drops[name] != drop:
            raise InvalidInputError(
                f"Param max_drops gives depth {depth} {drop!r} and Param {name} gives "
                f"{drops[name]!r}; give it once"
            )
        drops[name] = float(drop)
    level = params.get("relevance_level")
    if level is not None and (isinstance(level, bool) or level not in (1, 2, 3)):
        raise InvalidInputError(
            f"Param relevance_level: expected 1, 2 or 3 (the grade a target needs), got {level!r}"
        )
    return {"run": {"depths": depths, "relevance_level": level}, "thresholds": drops}


def run_key(context: Mapping[str, Any]) -> str:
    """The run key of what this DAG run records: the dashboard's way back to it."""
    from retrieval_eval.reports.links import run_key_for

    dag_run = context["dag_run"]
    key = run_key_for(dag_run.dag_id, dag_run.run_id)
    group = group_prefix(context).rstrip(".")
    return f"{key}#{group}" if group else key  # one DAG run may evaluate several pairs


def group_prefix(context: Mapping[str, Any]) -> str:
    """``"<group id>."`` when the running task is inside a task group (``evaluate_retrieval`` in
    a team's DAG), else ``""``: what the task ids it names (branches) need before them."""
    ti = context.get("ti")
    task_id = str(getattr(ti, "task_id", "") or "")
    return task_id.rpartition(".")[0] + "." if "." in task_id else ""


def _given(values: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in values.items() if value is not None}


def labelled_run(
    job: Mapping[str, Any], context: Mapping[str, Any]
) -> Workflow[Any, Any, Any, Any, Any]:
    """The labelled run of ``job`` in this DAG run: the Params override the job's settings and
    thresholds (a Param's ``baseline_run_id`` pins the baseline), and the job's own
    ``index_version`` wins over the triggering asset event's."""
    from retrieval_eval.config.models import load_config
    from retrieval_eval.workflows.labelled_run import LabelledRun, LabelledRunJob

    params = context.get("params") or {}
    overrides = manual_overrides(params)
    dag_run = context["dag_run"]
    spec = LabelledRunJob.model_validate(
        {
            **job,
            "run": {**(job.get("run") or {}), **_given(overrides["run"])},
            "thresholds": {**(job.get("thresholds") or {}), **_given(overrides["thresholds"])},
            "baseline_run_id": params.get("baseline_run_id") or job.get("baseline_run_id"),
            "run_key": run_key(context),
            "index_version": job.get("index_version")
            or index_version(context.get("triggering_asset_events")),
            "started_at": getattr(dag_run, "start_date", None),
        }
    )
    config = load_config(spec.config_path)  # read once per task: the store's and the run's
    url = functools.cache(lambda: store_url(job, config))
    # resolving the store registers its password with the redaction policy: a search service
    # that echoes it must not put it in any task's log or XCom; a bad store fails the plan
    # (its check, in order) and the record task, never retrieval
    with contextlib.suppress(Exception):
        url()
    return LabelledRun(spec, store_url=url, config=config)


def with_store(
    job: Mapping[str, Any], context: Mapping[str, Any], name: str
) -> Workflow[Any, Any, Any, Any, Any]:
    """A workflow whose job names its store by ``db`` (pool, judge, promote), the job's
    ``store_connection_id`` (the DAG's Airflow connection) turned into that URL here, at run
    time: the URL, which may hold a password, is in no job nor XCom."""
    from retrieval_eval.workflows.base import WORKFLOWS

    given = {key: value for key, value in job.items() if key != "store_connection_id"}
    if job.get("store_connection_id"):
        given["db"] = store_url(job)
    cls = WORKFLOWS[name]
    return cls(cls.job_type.model_validate(given))


def replay(job: Mapping[str, Any], context: Mapping[str, Any]) -> Workflow[Any, Any, Any, Any, Any]:
    """The replay of ``job`` in this DAG run: its run key (the dashboard's link back to the DAG
    run), the index build the triggering asset event names (the job's own wins), and the store
    (the Airflow connection when configured, else the usual lookup), read as a labelled run's
    binder reads them."""
    from retrieval_eval.config.models import load_config
    from retrieval_eval.workflows.replay import Replay, ReplayJob

    config = load_config(job.get("config_path"))  # read once per task: the store's and the replay's
    spec = ReplayJob.model_validate(
        {
            **job,
            "run_key": run_key(context),
            "index_version": job.get("index_version")
            or index_version(context.get("triggering_asset_events")),
            "store_url": store_url(job, config),
        }
    )
    return Replay(spec, config=config)


BINDERS: dict[
    str, Callable[[Mapping[str, Any], Mapping[str, Any]], Workflow[Any, Any, Any, Any, Any]]
] = {
    "labelled_run": labelled_run,
    **{
        name: functools.partial(with_store, name=name)  # type: ignore[misc]
        for name in ("pool", "judge", "promote")
    },
    "replay": replay,
}


def bind(
    name: str, job: Mapping[str, Any], context: Mapping[str, Any]
) -> Workflow[Any, Any, Any, Any, Any]:
    """The registered workflow ``name`` for ``job`` in this DAG run (its module, named after it,
    is imported first: ``retrieval_eval.workflows.<name>``)."""
    from retrieval_eval.workflows.base import WORKFLOWS

    if name not in WORKFLOWS:
        importlib.import_module(f"retrieval_eval.workflows.{name}")
    binder = BINDERS.get(name)
    if binder is not None:
        return binder(job, context)
    cls = WORKFLOWS[name]
    return cls(cls.job_type.model_validate(dict(job)))
