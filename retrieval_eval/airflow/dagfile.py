"""What ``dags/retrieval_eval_dags.py`` does at every parse: find the config, build its DAGs.

Parsing happens in the dag-processor AND in every task process (each re-parses the file), so it
must be cheap and must not guess:

- The config path comes from ``$RETRIEVAL_EVAL_CONFIG``: an environment lookup, free.
- Reading it from an Airflow Variable is opt-in: ``$RETRIEVAL_EVAL_CONFIG_VARIABLE`` names the
  Variable. That costs a metadata-database (or secrets backend) query at every parse, which is
  why it is not the default.
- A configured config that cannot be found, read or validated raises :class:`ConfigError`: the
  DAG file fails to import and Airflow shows the message as an import error. It never falls back
  to the demo.
- With nothing configured at all, the demo config beside the DAG file (``examples/``) is built,
  and each demo DAG's documentation says why it is there. Without a demo either, the import
  error says what to set.

Nothing here imports pandas, SQLAlchemy, Alembic, rich or an adapter: the config is YAML read
by pydantic models, and the tasks import the rest when they run.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from retrieval_eval.config.lookup import CONFIG_ENV
from retrieval_eval.config.models import load_config
from retrieval_eval.errors import ConfigError

VARIABLE_ENV = "RETRIEVAL_EVAL_CONFIG_VARIABLE"
DEMO_NOTE = (
    "**This is the demo evaluation** (`examples/` of retrieval-eval): no config is configured. "
    f"Set `${CONFIG_ENV}` to your config's path (or `${VARIABLE_ENV}` to the name of an Airflow "
    "Variable holding it) for your own evaluations; the demo then disappears."
)


def configured_path() -> tuple[str, str] | None:
    """``(path, where it came from)`` when a config is configured, else None."""
    path = os.environ.get(CONFIG_ENV)
    if path:
        return path, f"${CONFIG_ENV}"
    variable = os.environ.get(VARIABLE_ENV)
    if not variable:
        return None
    try:
        from airflow.sdk import Variable

        value = Variable.get(variable, default=None)
    except Exception as exc:
        raise ConfigError(
            f"cannot read the Airflow Variable {variable!r} named by ${VARIABLE_ENV} "
            f"({type(exc).__name__}); set ${CONFIG_ENV} instead, or make the Variable readable"
        ) from None
    if not value:
        raise ConfigError(
            f"the Airflow Variable {variable!r} named by ${VARIABLE_ENV} is not set; create it "
            "with the config's path, or unset the variable"
        )
    return str(value), f"Airflow Variable {variable!r}"


def dags_for_file(demo_config: Path) -> dict[str, Any]:
    """The DAGs a DAG file defines, by DAG id (put them in the file's globals)."""
    from retrieval_eval.airflow.factory import build_dags

    found = configured_path()
    if found is None:
        if not demo_config.is_file():
            raise ConfigError(
                f"no retrieval-eval config is configured: set ${CONFIG_ENV} to your config's "
                f"path (the demo config {demo_config} is not there either)"
            )
        return build_dags(load_config(demo_config), note=DEMO_NOTE)
    path, source = found
    try:
        config = load_config(path)
    except ConfigError as exc:
        raise ConfigError(f"{exc} (config path from {source})") from None
    return build_dags(config)
