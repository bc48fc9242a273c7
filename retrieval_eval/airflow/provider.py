"""The ``apache_airflow_provider`` entry point: what retrieval-eval adds to Airflow, declared.

Airflow's ProvidersManager reads :func:`get_provider_info` (``airflow providers get
rag-retrieval-eval``): the two connection types with their form (which field holds the host, the
database, the token; which are hidden), their hooks, and the run page's extra link. Slack alerts
use the Slack provider's own ``slackwebhook`` type. The dashboard plugin stays registered through
the ``airflow.plugins`` entry point alone: Airflow loads a provider's plugins only when
``[core] lazy_load_providers`` is off, and a plugin registered both ways is reported as a
duplicate.

Airflow reads provider info while its own configuration is still being imported, so importing
this module must not import ``airflow.sdk`` (a circular import would fail every ``airflow``
command): hence the package's lazy ``__init__``; Airflow imports the hooks when it needs them.
"""

from __future__ import annotations

from typing import Any

_HOOKS = "retrieval_eval.airflow.hooks"
_STRING = {"type": ["string", "null"]}


def get_provider_info() -> dict[str, Any]:
    from retrieval_eval import DISTRIBUTION

    return {
        "package-name": DISTRIBUTION,
        "name": "Retrieval-eval",
        "description": "Nightly retrieval-quality evaluation: the result store's and the webhook "
        "alerts' connection types, the run page link, the dashboard.",
        "integrations": [
            {"integration-name": "Retrieval-eval", "tags": ["software"]},
        ],
        "hooks": [{"integration-name": "Retrieval-eval", "python-modules": [_HOOKS]}],
        "connection-types": [
            {
                "hook-class-name": f"{_HOOKS}.RetrievalEvalStoreHook",
                "hook-name": "Retrieval-eval result store",
                "connection-type": "retrieval_eval_store",
                "ui-field-behaviour": {
                    "hidden-fields": ["extra"],
                    "relabeling": {"host": "PostgreSQL host", "schema": "Database"},
                    "placeholders": {
                        "host": "db.internal (or leave empty and fill in Store URL)",
                        "port": "5432",
                        "schema": "retrieval_eval",
                        "login": "eval",
                        "url": "sqlite:////var/lib/retrieval-eval/results.sqlite",
                    },
                },
                "conn-fields": {
                    "url": {
                        "label": "Store URL",
                        "schema": _STRING,
                        "description": "Optional. A whole store URL (sqlite:///path or "
                        "postgresql://user:password@host:5432/db), used instead of the fields.",
                    },
                },
            },
            {
                "hook-class-name": f"{_HOOKS}.RetrievalEvalWebhookHook",
                "hook-name": "Retrieval-eval webhook alerts",
                "connection-type": "retrieval_eval_webhook",
                "ui-field-behaviour": {
                    "hidden-fields": ["login", "extra"],
                    "relabeling": {
                        "host": "Webhook URL",
                        "schema": "Scheme",
                        "password": "Bearer token",
                    },
                    "placeholders": {
                        "host": "https://hooks.example.com/retrieval-eval",
                        "schema": "https (when the URL has no scheme)",
                        "password": "optional: sent as Authorization: Bearer <token>",
                    },
                },
            },
        ],
        "extra-links": ["retrieval_eval.airflow.links.RunPageLink"],
    }
