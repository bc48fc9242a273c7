"""The dashboard's routes: seven pages and their JSON twins under ``/api`` (see :mod:`.app`), and
the one write, a review candidate's grade (``POST /review/judge``, see :mod:`.review_view`).

Two routers, so the app can add the errors every route may answer (401 without a signed-in user,
503 without a store) in the right media type: JSON for :data:`api`, HTML for :data:`pages`.
Each route reads the store on the request (``request.app.state.store_source``), after its
parameters are checked, so a bad parameter is a 400 even while the store is down.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, Form, Path, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse
from pydantic import BaseModel, StringConstraints

from retrieval_eval.formats.jsonio import dumps
from retrieval_eval.reports.links import DASHBOARD_PREFIX
from retrieval_eval.safety.limits import quote
from retrieval_eval.webui.rendering import modules, render

if TYPE_CHECKING:
    from retrieval_eval.store import Store

SPARK_RUNS = 12  # runs in an overview sparkline
HISTORY_RUNS = 60  # runs on a history page unless ?runs= says otherwise
# The store's ids are SQL INTEGERs: 32-bit on PostgreSQL (64-bit on SQLite, but counted up from 1
# they never get near). A larger id names no run, and querying it would fail: "integer out of
# range" on PostgreSQL, an OverflowError in either driver past 64 bits.
MAX_RUN_ID = 2**31 - 1
RunId = Annotated[int, Path(ge=1, le=MAX_RUN_ID, description="a stored run's id")]
# PostgreSQL cannot compare a string holding NUL: such a name is malformed, never just unknown
NAME_PATTERN = "^[^\\x00]*$"
Name = Annotated[str, StringConstraints(pattern=NAME_PATTERN)]  # one of a repeated parameter
# the run page's filters as the schema states them (listing.SHOW and QuestionForm, which a test
# compares with these: importing them here would slow every Airflow process); "" is "any"
SHOW_PATTERN = "^(all|misses|top1_misses|hits|errors|flipped|stale)$"
FORM_PATTERN = "^(|match|gap)$"
MAX_DEPTH = 100  # evaluation.MAX_DEPTH, the deepest a run gates (a test compares them)

ERRORS = {
    400: "a malformed query parameter",
    401: "no signed-in Airflow user",
    403: "the signed-in user may not edit, or the CSRF token is missing or wrong",
    404: "no such run, set or retriever",
    409: "the review candidate left the queue since the page was loaded (graded already)",
    503: "the result store is unavailable",
}
_DETAIL = {"type": "object", "properties": {"detail": {"type": "string"}}, "required": ["detail"]}


def errors(*codes: int, api: bool) -> dict[int | str, dict[str, Any]]:
    """The OpenAPI description of error answers (JSON or an HTML page)."""
    media = (
        {"application/json": {"schema": _DETAIL}}
        if api
        else {"text/html": {"schema": {"type": "string"}}}
    )
    return {code: {"description": ERRORS[code], "content": media} for code in sorted(codes)}


api = APIRouter()
pages = APIRouter()


def _store(request: Request) -> Store:
    store: Store = request.app.state.store_source.store()
    return store


class _OrjsonResponse(JSONResponse):
    """A page's JSON twin, written by :mod:`retrieval_eval.formats.jsonio` (compact)."""

    def render(self, content: Any) -> bytes:
        return dumps(content, indent=False).encode("utf-8")


def _json(model: BaseModel) -> JSONResponse:
    return _OrjsonResponse(model.model_dump(mode="json"))


def run_listing(
    show: str = Query("all", pattern=SHOW_PATTERN),
    form: str | None = Query(None, pattern=FORM_PATTERN),
    hard_class: str | None = Query(None, pattern=NAME_PATTERN),
    page: int = Query(1, ge=1, le=MAX_RUN_ID),
    depth: int | None = Query(
        None, ge=1, le=MAX_DEPTH, description="the gated depth misses count at (default: deepest)"
    ),
) -> dict[str, Any]:
    """The run page's list parameters (checked against the run by :mod:`.listing`)."""
    # the filter form's "any" sends an empty value: no filter
    return {
        "show": show,
        "form": form or None,
        "hard_class": hard_class or None,
        "page": page,
        "depth": depth,
    }


def compare_query(
    set: str = Query(..., description="set identifier", pattern=NAME_PATTERN),
    r: list[Name] = Query([], description="a retriever to compare (repeat for each)"),
    a: str | None = Query(None, pattern=NAME_PATTERN, description="the first retriever (as r)"),
    b: str | None = Query(None, pattern=NAME_PATTERN, description="the second retriever (as r)"),
    reference: str | None = Query(None, pattern=NAME_PATTERN),
    alpha: float = Query(0.05, gt=0, lt=1, description="significance level (Holm-corrected)"),
) -> dict[str, Any]:
    """The compare page's parameters (see :mod:`.compare_view`); ``a``/``b`` come first."""
    # the page's form sends an empty reference for "the best" and may send empty names
    named = [name for name in (a, b, *r) if name]
    return {"set_identifier": set, "named": named, "reference": reference or None, "alpha": alpha}


# -- overview --------------------------------------------------------------------------------


@api.get("/api/overview")
def api_overview(request: Request) -> JSONResponse:
    _, views = modules()
    return _json(views.overview(_store(request), SPARK_RUNS))


@pages.get("/", response_class=HTMLResponse)
def overview_page(request: Request) -> Any:
    page_helpers, views = modules()
    data = views.overview(_store(request), SPARK_RUNS)
    trend = views.gated_depths([run for pair in data.pairs for run in pair.recent])
    rows = page_helpers.overview_rows(data, trend)
    depths = views.gated_depths([pair.latest for pair in data.pairs])
    key = page_helpers.trend_key(trend)
    return render(request, "overview.html", data=data, rows=rows, depths=depths, trend_key=key)


# -- history ---------------------------------------------------------------------------------


def history_query(
    set: str = Query(..., description="set identifier", pattern=NAME_PATTERN),
    retriever: str = Query(..., pattern=NAME_PATTERN),
    runs: int = Query(HISTORY_RUNS, ge=1, le=1000),
) -> dict[str, Any]:
    """The history page's parameters and its JSON twin's (see :func:`.views.history`)."""
    return {"set_identifier": set, "retriever": retriever, "runs": runs}


@api.get("/api/history", responses=errors(400, 404, api=True))
def api_history(request: Request, query: dict[str, Any] = Depends(history_query)) -> JSONResponse:
    _, views = modules()
    return _json(views.history(_store(request), **query))


@pages.get("/history", response_class=HTMLResponse, responses=errors(400, 404, api=False))
def history_page(
    request: Request,
    dim: str = Query("overall", pattern="^(overall|form|hard_class)$"),
    query: dict[str, Any] = Depends(history_query),
) -> Any:
    page_helpers, views = modules()
    data = views.history(_store(request), **query)
    charts = page_helpers.history_charts(data, dim)
    return render(request, "history.html", data=data, dim=dim, charts=charts)


# -- one run ---------------------------------------------------------------------------------


@api.get("/api/runs/{run_id}", responses=errors(400, 404, api=True))
def api_run(
    request: Request, run_id: RunId, listed: dict[str, Any] = Depends(run_listing)
) -> JSONResponse:
    _, views = modules()
    return _json(views.run_view(_store(request), run_id, views.ListQuery(**listed)))


@pages.get("/runs/{run_id}", response_class=HTMLResponse, responses=errors(400, 404, api=False))
def run_page(request: Request, run_id: RunId, listed: dict[str, Any] = Depends(run_listing)) -> Any:
    page_helpers, views = modules()
    data = views.run_view(_store(request), run_id, views.ListQuery(**listed))
    dag_run = page_helpers.dag_run_href(data.run_key, _airflow_url(request))
    flipped = page_helpers.flip_marks(data.flips)
    return render(
        request,
        "run.html",
        data=data,
        dag_run=dag_run,
        flipped=flipped,
        flip_kinds=data.flips.kinds(),
    )


def _airflow_url(request: Request) -> str | None:
    """Where the Airflow UI is, for a run's link to its DAG run: the app's ``airflow_url`` when
    it was given one (``serve --airflow-url``), else, mounted inside Airflow (at
    ``/retrieval-eval``), the mount point's parent on the same origin; else unknown."""
    given: str | None = request.app.state.airflow_url
    if given is not None:
        return given
    root = request.scope.get("root_path", "").rstrip("/")
    return root[: -len(DASHBOARD_PREFIX)] if root.endswith(DASHBOARD_PREFIX) else None


# -- N retrievers on one set -----------------------------------------------------------------


@api.get("/api/compare", responses=errors(400, 404, api=True))
def api_compare(request: Request, query: dict[str, Any] = Depends(compare_query)) -> JSONResponse:
    _, views = modules()
    return _json(views.compare(_store(request), **query))


@pages.get("/compare", response_class=HTMLResponse, responses=errors(400, 404, api=False))
def compare_page(request: Request, query: dict[str, Any] = Depends(compare_query)) -> Any:
    _, views = modules()
    return render(request, "compare.html", data=views.compare(_store(request), **query))


# -- replays: ranking drift without labels ------------------------------------------------------

REPLAYS = 60  # replays on a drift page
BUCKET_PATTERN = "^(|head|torso|tail)$"


def drift_query(
    sample: str = Query(..., pattern=NAME_PATTERN),
    retriever: str = Query(..., pattern=NAME_PATTERN),
) -> dict[str, Any]:
    """The drift page's parameters and its JSON twin's (see :func:`.replay_view.drift`)."""
    return {"sample": sample, "retriever": retriever, "limit": REPLAYS}


@api.get("/api/drift", responses=errors(400, 404, api=True))
def api_drift(request: Request, query: dict[str, Any] = Depends(drift_query)) -> JSONResponse:
    from retrieval_eval.webui import replay_view

    return _json(replay_view.drift(_store(request), **query))


@pages.get("/drift", response_class=HTMLResponse, responses=errors(400, 404, api=False))
def drift_page(request: Request, query: dict[str, Any] = Depends(drift_query)) -> Any:
    from retrieval_eval.webui import replay_view

    data = replay_view.drift(_store(request), **query)
    return render(request, "drift.html", data=data, charts=replay_view.drift_charts(data))


def replay_listing(
    bucket: str | None = Query(None, pattern=BUCKET_PATTERN),
    page: int = Query(1, ge=1, le=MAX_RUN_ID),
) -> dict[str, Any]:
    """The replay page's list parameters and its JSON twin's (the form's "any" bucket is empty:
    no filter)."""
    return {"bucket": bucket or None, "page": page}


@api.get("/api/replays/{replay_id}", responses=errors(400, 404, api=True))
def api_replay(
    request: Request, replay_id: RunId, listed: dict[str, Any] = Depends(replay_listing)
) -> JSONResponse:
    from retrieval_eval.webui import replay_view

    return _json(replay_view.replay_page(_store(request), replay_id, **listed))


@pages.get(
    "/replays/{replay_id}", response_class=HTMLResponse, responses=errors(400, 404, api=False)
)
def replay_page(
    request: Request, replay_id: RunId, listed: dict[str, Any] = Depends(replay_listing)
) -> Any:
    from retrieval_eval.webui import replay_view

    data = replay_view.replay_page(_store(request), replay_id, **listed)
    return render(request, "replay.html", data=data)


# -- the review queue: candidates to grade, the dashboard's one write ---------------------------

GRADE_PATTERN = "^(0|1|2|3|skip)$"


def _queue(request: Request, set_identifier: str, page: int) -> Any:
    from retrieval_eval.webui import auth, review_view

    can_edit = auth.may_edit(request)
    return review_view.review_queue(
        request.app.state.review_source,
        _store(request),
        set_identifier,
        page,
        rater=auth.user_name(request),
        can_edit=can_edit,
        csrf_token=auth.csrf_token(request) if can_edit else None,
    )


@api.get("/api/review", responses=errors(400, 404, api=True))
def api_review(
    request: Request,
    set: str = Query(..., description="set identifier", pattern=NAME_PATTERN),
    page: int = Query(1, ge=1, le=MAX_RUN_ID),
) -> JSONResponse:
    return _json(_queue(request, set, page))


@pages.get("/review", response_class=HTMLResponse, responses=errors(400, 404, api=False))
def review_page(
    request: Request,
    set: str = Query(..., pattern=NAME_PATTERN),
    page: int = Query(1, ge=1, le=MAX_RUN_ID),
) -> Any:
    return render(request, "review.html", data=_queue(request, set, page))


@pages.post(
    "/review/judge",
    status_code=303,
    response_class=RedirectResponse,
    responses=errors(400, 403, 404, 409, api=False),
)
def review_judge(
    request: Request,
    set: str | None = Form(None),
    question_id: str | None = Form(None),
    document_id: str | None = Form(None),
    grade: str | None = Form(None),
    page: int = Form(1, ge=1, le=MAX_RUN_ID),
    csrf_token: str | None = Form(None),
) -> Any:
    """Store one grade (or skip) of a review candidate by the signed-in user; back to the queue.

    Refused with 403, nothing stored: a user the auth manager does not let edit, a missing or
    wrong CSRF token. A pair that is no candidate of the set's queue is a 400; one that left the
    user's queue since the page was loaded (graded by anyone, skipped by this user) a 409."""
    import re
    from datetime import UTC, datetime

    from fastapi import HTTPException

    from retrieval_eval.labels.judgments import Judgment
    from retrieval_eval.webui import auth, review_view

    if not auth.may_edit(request):
        local = getattr(request.state, "local_user", None) is not None
        who = "your role (viewer)" if local else "your Airflow user"
        raise HTTPException(403, f"{who} may not edit: the review queue is read-only")
    if not auth.check_csrf(request, csrf_token):
        raise HTTPException(403, "missing or wrong CSRF token: reload the review page, grade again")
    fields = {"set": set, "question_id": question_id, "document_id": document_id, "grade": grade}
    missing = [name for name, value in fields.items() if not value or "\x00" in value]
    if missing or not re.fullmatch(GRADE_PATTERN, grade or ""):
        raise HTTPException(
            400, f"bad request: give {', '.join(missing) or 'grade: 0 to 3 or skip'}"
        )
    assert set and question_id and document_id and grade
    rater = auth.user_name(request)
    pair = f"{quote(document_id)} of question {quote(question_id)}"  # posted: ~200 chars each
    try:
        source = review_view.candidate_source(
            request.app.state.review_source, _store(request), set, question_id, document_id, rater
        )
    except review_view.NoLongerQueued:
        raise HTTPException(409, f"{pair} is no longer in your review queue of {set}: graded "
                            "since the page was loaded; reload the queue") from None  # fmt: skip
    if source is None:
        raise HTTPException(400, f"{pair} is no candidate in the review queue of {set}")
    writer = request.app.state.store_source.writer()
    if writer is None:
        raise HTTPException(503, "no result store yet: nothing to review")
    row = Judgment(
        question_id=question_id,
        document_id=document_id,
        grade=None if grade == "skip" else int(grade),
        rater=rater,
        time=datetime.now(UTC),
        source=source,
    )
    writer.judgments.add(set, [row], channel="dashboard", written_by=str(rater))
    root = request.scope.get("root_path", "").rstrip("/")
    return RedirectResponse(f"{root}/review?{urlencode({'set': set, 'page': page})}", 303)
