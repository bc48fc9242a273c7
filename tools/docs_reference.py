"""The docs site's reference pages, generated from the code so nothing is written twice.

Run by mkdocs as a hook (``hooks:`` in mkdocs.yml): each page below is added to the build
in memory. The config's JSON Schema is published in ``docs/schema/`` (committed, so editors can
validate ``retrieval_eval.yaml``): ``python tools/docs_reference.py`` writes it, and the build and
``tests/test_docs_reference.py`` fail when it differs from the models.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SCHEMA_PATH = ROOT / "docs" / "schema" / "retrieval_eval.schema.json"
SCHEMA_URL = "schema/retrieval_eval.schema.json"


def model_schema() -> dict[str, Any]:
    """The Config model's JSON Schema, as it validates input: the config reference's source."""
    from retrieval_eval.config.models import Config

    return Config.model_json_schema(mode="validation")


def config_schema() -> dict[str, Any]:
    """The published JSON Schema of ``retrieval_eval.yaml``: the model's, plus what the models'
    ``mode="before"`` validators accept and pydantic cannot describe (a set given as its path,
    ``lint: warn``, ``max_topK_drop`` at any depth). The test validates the shipped configs
    against it, so a new shorthand the schema lacks fails there."""
    schema = model_schema()
    defs = schema["$defs"]
    defs["SetSource"] = {
        "anyOf": [
            {"type": "string", "description": "a set file or folder's path"},
            defs["SetSource"],
        ]
    }
    defs["LintOptions"] = {
        "anyOf": [
            {"enum": ["off", "warn", "fail"], "description": "shorthand for {mode: ...}"},
            {"type": "boolean", "description": "false: off, true: warn"},
            defs["LintOptions"],
        ]
    }
    drop = {"type": "number", "minimum": 0, "maximum": 1, "description": "a gated depth's drop"}
    for name in ("Thresholds", "SliceThresholds"):
        defs[name]["patternProperties"] = {"^max_top[0-9]+_drop$": drop}
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}


def schema_text() -> str:
    return json.dumps(config_schema(), indent=2, ensure_ascii=False, sort_keys=True) + "\n"


def write_schema() -> bool:
    """Write the schema file; True when it changed."""
    text = schema_text()
    if SCHEMA_PATH.exists() and SCHEMA_PATH.read_text(encoding="utf-8") == text:
        return False
    SCHEMA_PATH.parent.mkdir(parents=True, exist_ok=True)
    SCHEMA_PATH.write_text(text, encoding="utf-8")
    return True


# --- the config reference --------------------------------------------------------------------


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if ref:
        return schema["$defs"][ref.rsplit("/", 1)[1]]
    return node


def _type(schema: dict[str, Any], node: dict[str, Any]) -> str:
    """A short type for a property: ``integer``, ``list of string``, ``AlertSpec | null``."""
    if "$ref" in node:
        return f"[{node['$ref'].rsplit('/', 1)[1]}](#{node['$ref'].rsplit('/', 1)[1].lower()})"
    for key in ("anyOf", "oneOf"):
        if key in node:
            return " | ".join(dict.fromkeys(_type(schema, n) for n in node[key]))
    if "enum" in node:
        return " | ".join(f"`{v}`" for v in node["enum"])
    if "const" in node:
        return f"`{node['const']}`"
    kind = node.get("type", "any")
    if kind == "array":
        items = node.get("items")
        if isinstance(items, dict):
            return f"list of {_type(schema, items)}"
        prefix = node.get("prefixItems")
        if prefix:
            return "[" + ", ".join(_type(schema, n) for n in prefix) + "]"
        return "list"
    if kind == "object" and isinstance(node.get("additionalProperties"), dict):
        return f"map of {_type(schema, node['additionalProperties'])}"
    return str(kind)


def _cell(text: object) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _default(node: dict[str, Any], required: bool) -> str:
    if required:
        return "*required*"
    if "default" not in node:
        return ""
    return f"`{json.dumps(node['default'], ensure_ascii=False)}`"


def undescribed_fields(schema: dict[str, Any] | None = None) -> list[str]:
    """``Model.field`` for every config field without a description (the test wants none)."""
    schema = schema or model_schema()
    models = {"Config": schema, **schema.get("$defs", {})}
    return [
        f"{name}.{field}"
        for name, model in models.items()
        for field, node in model.get("properties", {}).items()
        if not node.get("description")
    ]


def config_page() -> str:
    schema = model_schema()
    lines = [
        "# Configuration reference",
        "",
        "Every key of `retrieval_eval.yaml`, generated from the pydantic models that validate it",
        "(`retrieval_eval.config.models`). The same models give a JSON Schema, published as",
        f"[`{SCHEMA_URL}`](../{SCHEMA_URL}): point your editor's YAML support at it to have",
        "the file checked as you type, e.g. with a first line",
        "`# yaml-language-server: $schema=<path or URL of the schema>`.",
        "",
    ]
    models = [("Config", schema), *sorted(schema.get("$defs", {}).items())]
    for name, model in models:
        if "properties" not in model:
            continue
        lines += [f"## {name}", ""]
        if model.get("description"):
            lines += [" ".join(model["description"].split()), ""]
        lines += ["| key | type | default | description |", "|---|---|---|---|"]
        required = set(model.get("required", []))
        for field, node in model["properties"].items():
            lines.append(
                f"| `{field}` | {_cell(_type(schema, node))} | {_cell(_default(node, field in required))}"
                f" | {_cell(node.get('description', ''))} |"
            )
        lines.append("")
    return "\n".join(lines)


# --- exit codes ------------------------------------------------------------------------------


def exit_codes_page() -> str:
    import inspect

    from retrieval_eval import errors

    classes = [
        c
        for _, c in inspect.getmembers(errors, inspect.isclass)
        if issubclass(c, errors.RetrievalEvalError) and c.__module__ == errors.__name__
    ]
    lines = [
        "# Exit codes",
        "",
        "What a command's exit code says, for scripts and CI jobs. Each error a user can cause is",
        "one class of `retrieval_eval.errors` carrying its exit code; this table is generated",
        "from them. A regression is not an error: `run --fail-on-regression` exits 1 on one.",
        "",
        "| code | meaning |",
        "|---:|---|",
        "| 0 | success (a regression too, unless `--fail-on-regression`) |",
        "| 1 | a regression, with `run --fail-on-regression` |",
        "| 2 | bad input or usage (click's own usage errors exit 2 too) |",
        "| 3 | an invalid run, or a store or source that cannot be reached or used |",
        "| 130 | interrupted (Ctrl-C, SIGINT) |",
        "| 143 | terminated (SIGTERM) |",
        "",
        "## The error classes",
        "",
        "| error | exit code | when |",
        "|---|---:|---|",
    ]
    for cls in sorted(classes, key=lambda c: (c.exit_code, c.__name__)):
        doc = " ".join((inspect.getdoc(cls) or "").split())
        lines.append(f"| `{cls.__name__}` | {cls.exit_code} | {_cell(doc)} |")
    lines += [
        "",
        "Per command, see the [CLI reference](cli.md) and, for `run`, "
        "[the verdict](../concepts/verdict.md#commands-and-exit-codes).",
        "",
    ]
    return "\n".join(lines)


# --- the store schema ------------------------------------------------------------------------


def store_page() -> str:
    from retrieval_eval.store import schema as store_schema
    from retrieval_eval.store.names import HEAD

    lines = [
        "# Store schema",
        "",
        "The tables of the result store, generated from the SQLAlchemy metadata",
        "(`retrieval_eval.store.schema`); Alembic migrations create and upgrade them",
        f"(`retrieval-eval db upgrade`; the newest revision is `{HEAD}`).",
        "[The store](../operations/store.md) says what each table is for.",
        "",
    ]
    for table in store_schema.metadata.sorted_tables:
        lines += [f"## `{table.name}`", ""]
        if table.comment:
            lines += [table.comment, ""]
        lines += ["| column | type | null | key |", "|---|---|---|---|"]
        for column in table.columns:
            key = "primary" if column.primary_key else ""
            if column.foreign_keys:
                key = ", ".join(f"→ `{fk.target_fullname}`" for fk in column.foreign_keys)
            lines.append(
                f"| `{column.name}` | {_cell(column.type)} | {'yes' if column.nullable else 'no'}"
                f" | {key} |"
            )
        indexes = sorted(table.indexes, key=lambda i: str(i.name))
        if indexes:
            lines += [""] + [
                f"- index `{i.name}` on {', '.join(f'`{c.name}`' for c in i.columns)}"
                + (" (unique)" if i.unique else "")
                for i in indexes
            ]
        lines.append("")
    return "\n".join(lines)


# --- the JSON contract -----------------------------------------------------------------------


def example_contract() -> dict[str, Any]:
    """The JSON document of a run (``show --format json``), computed by the scoring code on a
    two-question set, so the example has every key the code writes today."""
    from datetime import UTC, datetime

    from retrieval_eval import FunctionRetriever, GoldenQuestionSet, RunSettings, evaluate

    golden = GoldenQuestionSet.model_validate(
        {
            "identifier": "example",
            "questions": [
                {
                    "id": "q1",
                    "question": "How do refunds work?",
                    "form": "match",
                    "expected_document_ids": ["billing/refunds.md"],
                },
                {
                    "id": "q2",
                    "question": "Reset my password",
                    "form": "gap",
                    "expected_document_ids": ["account/password.md"],
                    "hard_class": "synonym",
                },
            ],
        }
    )
    ranking = {
        "How do refunds work?": ["billing/refunds.md", "billing/invoices.md"],
        "Reset my password": ["account/login.md", "account/password.md"],
    }
    run = evaluate(
        golden,
        FunctionRetriever(lambda q, k: ranking[q][:k], identifier="my_retriever"),
        RunSettings(),
        run_key="example",
    )
    contract = run.contract()
    fixed = datetime(2026, 1, 1, tzinfo=UTC).isoformat()
    contract.update(started_at=fixed, finished_at=fixed, package_version="0.1.0")
    contract["latency_ms"] = {k: 0.0 for k in contract["latency_ms"]}
    for question in contract["questions"]:
        if "latency_ms" in question:
            question["latency_ms"] = 0.0
    return contract


def contract_page() -> str:
    from retrieval_eval.formats.jsonio import dumps

    example = dumps(example_contract())
    return "\n".join(
        [
            "# The JSON contract",
            "",
            "`retrieval-eval run --format json`, `runs show --format json`, `runs list --format json` and",
            "the dashboard's `/api/...` endpoints write one stable document per run,",
            "`RunResult.contract()`. It is valid JSON: a NaN or infinite value is written `null`.",
            "`depths` lists the gated depths; each one beyond top-1 and top-3 adds `top{k}_hits`,",
            "`top{k}_hit_rate` and `top{k}_hit_rate_ci` (overall and per slice) and `top{k}_hit`",
            "per question. A stale question also carries `stale_label` and `dead_ids`.",
            "",
            "This example is generated by the scoring code on a two-question set (times and",
            "latencies fixed), so it has every key a run has today:",
            "",
            "```json",
            example,
            "```",
            "",
            "The verdict's JSON (`regression` in `runs list --format json`) is",
            "`Verdict.contract()`; see [the verdict](../concepts/verdict.md).",
            "",
        ]
    )


# --- the Python API --------------------------------------------------------------------------


def api_page() -> str:
    """One mkdocstrings entry per name ``retrieval_eval`` exports, from its own table of
    exports (``_EXPORTS``: name -> module), so a name moved to another module moves here too."""
    from retrieval_eval import _EXPORTS

    lines = [
        "# Python API",
        "",
        "The names `retrieval_eval` exports (`from retrieval_eval import evaluate, ...`),",
        "documented from their docstrings by mkdocstrings. They are imported lazily, so",
        "`import retrieval_eval` stays fast. [Getting started](../getting-started.md) shows",
        "them at work.",
        "",
    ]
    for name, module in _EXPORTS.items():
        lines += [
            f"::: {module}.{name}",
            "    options:",
            "      show_root_full_path: false",
            "      heading_level: 2",
            "",
        ]
    return "\n".join(lines)


PAGES = {
    "reference/api.md": api_page,
    "reference/config.md": config_page,
    "reference/exit-codes.md": exit_codes_page,
    "reference/store-schema.md": store_page,
    "reference/json-contract.md": contract_page,
}


def on_files(files: Any, config: Any) -> Any:
    """mkdocs hook: add the generated pages; the build fails when the published schema is not
    the models' (it is written by ``python tools/docs_reference.py``, never by a build, so a
    stale committed file cannot pass CI)."""
    from mkdocs.exceptions import PluginError
    from mkdocs.structure.files import File

    if not SCHEMA_PATH.exists() or SCHEMA_PATH.read_text(encoding="utf-8") != schema_text():
        raise PluginError(
            f"{SCHEMA_PATH.relative_to(ROOT)} is not the config models' schema: "
            "run `.venv/bin/python tools/docs_reference.py` and commit it"
        )
    for uri, render in PAGES.items():
        files.append(File.generated(config, uri, content=render()))
    return files


if __name__ == "__main__":
    print("changed" if write_schema() else "up to date", SCHEMA_PATH, file=sys.stderr)
