"""Where the config file is, and the defaults a missing one stands for, without pydantic or YAML.

:mod:`retrieval_eval.config.models` builds its models on these; ``show`` uses them directly to tell,
for a stored run's power line, whether a config exists and what its thresholds default to,
without importing the config models, which a command that reads one row does not need.

Lookup order: ``--config``, then ``$RETRIEVAL_EVAL_CONFIG``, then ``./retrieval_eval.yaml`` when
that file exists; otherwise there is no config and every setting takes its default.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

CONFIG_ENV = "RETRIEVAL_EVAL_CONFIG"
DEFAULT_CONFIG_NAME = "retrieval_eval.yaml"

# the defaults of Thresholds and LintOptions that the power line reads
MAX_DROP = 0.10  # a gated depth's default max drop (max_topK_drop)
MAX_TOP1_DROP = MAX_DROP
MAX_TOP3_DROP = MAX_DROP
POWER_ALPHA = 0.05
POWER = 0.8
POWER_CHURN = 0.05

# a check's severity, as dbt's tests have: an ``error`` check that fires makes the run a
# regression (and fails the gate); a ``warn`` check shows in the verdict and alert, no more
Severity = Literal["error", "warn"]


def find_config(explicit: str | Path | None = None) -> Path | None:
    """The config path by lookup order, or None when there is none."""
    if explicit:
        return Path(explicit)
    env = os.environ.get(CONFIG_ENV)
    if env:
        return Path(env)
    default = Path.cwd() / DEFAULT_CONFIG_NAME
    return default if default.is_file() else None


def lookup_note() -> str:
    """Where :func:`find_config` looked when it found nothing (for "unknown name" errors)."""
    env = "set but empty" if CONFIG_ENV in os.environ else "not set"
    default = Path.cwd() / DEFAULT_CONFIG_NAME
    return (
        f"no config file found (looked for --config: not given, ${CONFIG_ENV}: {env}, "
        f"{default}: no such file); give --config FILE or set ${CONFIG_ENV}"
    )
