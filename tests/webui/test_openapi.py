"""Schemathesis drives every dashboard route from the app's own OpenAPI schema.

The schema is ``app.openapi()`` (the app does not serve it: see test_security.py), with the
stored names and a stored run id added as the parameters' examples so that pages with content are
called too. Each case calls, in-process through ASGI, an app over a store holding real runs, on
SQLite and PostgreSQL. Every check of schemathesis applies: no 500, every status code and content
type declared, every JSON answer valid against its view model's schema, malformed input rejected
with a 4xx and valid input accepted; and every answer carries the security headers. Auth is off
(it is covered in test_security.py). Bounded: a few examples per route, a few seconds in all.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import schemathesis
from fastapi import FastAPI
from hypothesis import HealthCheck, settings
from schemathesis import Case

from retrieval_eval.webui.app import CSP, create_app
from webui.fill import BM25, SET, TRUNCATED, Filled

REGRESSION_RUN = 4  # the fourth run fill() records: the regression, with a baseline and flips
EXAMPLES = {"set": SET, "retriever": BM25, "a": BM25, "b": TRUNCATED, "run_id": REGRESSION_RUN}


def _schema() -> schemathesis.BaseSchema:
    # the schema does not depend on the store: building the app opens nothing
    raw = create_app("sqlite:///unused.sqlite", require_auth=False).openapi()
    for operations in raw["paths"].values():
        for operation in operations.values():  # GET everywhere, POST on /review/judge
            for parameter in operation.get("parameters", []):
                if parameter["name"] in EXAMPLES:
                    parameter["example"] = EXAMPLES[parameter["name"]]
    return schemathesis.openapi.from_dict(raw)


schema = _schema()


@pytest.fixture
def dashboard(filled: Filled) -> Iterator[FastAPI]:
    assert filled.regression_ids == [REGRESSION_RUN]  # the example names the run it means
    app = create_app(filled.url, require_auth=False)
    yield app
    app.state.store_source.close()


@schema.parametrize()
@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    database=None,
)
def test_every_route_answers_within_its_schema(case: Case, dashboard: FastAPI) -> None:
    response = case.call_and_validate(app=dashboard)
    assert response.headers["content-security-policy"] == [CSP], case.as_curl_command()
    assert response.headers["x-content-type-options"] == ["nosniff"]
