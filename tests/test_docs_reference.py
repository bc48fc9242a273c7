"""The reference is generated from the code, and the code has what it needs for that.

Every command and option says what it does (the CLI reference is click's help), every config key
has a description (the config reference and the editors' JSON Schema are the models'), the
published schema is the models' and accepts the shipped configs and the docs' config blocks, the
built site's CLI reference has every command and option, and every install hint names this
project's distribution (``retrieval-eval`` on PyPI is another project).
"""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import click
import jsonschema
import pytest
import yaml

import retrieval_eval
from retrieval_eval import DISTRIBUTION
from retrieval_eval.cli import cli
from retrieval_eval.retrievers.extras import ADAPTER_EXTRAS, pip_command

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import docs_reference  # noqa: E402

BIN = Path(sys.executable).parent


def _commands(
    command: click.Command, path: tuple[str, ...], hidden: bool = False
) -> Iterator[tuple[str, click.Command]]:
    """The commands under ``command``; with ``hidden``, only the hidden ones (old spellings)."""
    if command.hidden == hidden:
        yield " ".join(path), command
    if isinstance(command, click.Group) and (hidden or not command.hidden):
        for name, sub in sorted(command.commands.items()):
            yield from _commands(sub, (*path, name), hidden)


COMMANDS = list(_commands(cli, ("retrieval-eval",)))
OLD_SPELLINGS = list(_commands(cli, ("retrieval-eval",), hidden=True))


def _options(command: click.Command) -> list[click.Option]:
    return [p for p in command.params if isinstance(p, click.Option) and not p.hidden]


def test_every_command_and_option_has_a_description() -> None:
    assert len(COMMANDS) > 30  # the walk reached the nested groups (sets judge import, ...)
    missing = [path for path, command in COMMANDS if not (command.help or command.short_help)]
    missing += [
        f"{path} {option.opts[0]}"
        for path, command in COMMANDS
        for option in _options(command)
        if not (option.help or "").strip()
    ]
    assert not missing, f"give these a help text: {missing}"


def test_every_config_key_has_a_description() -> None:
    schema = docs_reference.model_schema()
    assert "thresholds" in schema["properties"] and "Thresholds" in schema["$defs"]
    missing = docs_reference.undescribed_fields(schema)
    assert not missing, f"give these fields a docstring (use_attribute_docstrings): {missing}"


def test_the_published_schema_is_the_models() -> None:
    published = docs_reference.SCHEMA_PATH.read_text(encoding="utf-8")
    assert published == docs_reference.schema_text(), (
        "run .venv/bin/python tools/docs_reference.py and commit the schema"
    )


def _config_blocks() -> list[tuple[str, object]]:
    """The docs' YAML blocks that are whole configs or parts of one (top-level config keys)."""
    keys = set(docs_reference.model_schema()["properties"])
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    found = []
    for page in pages:
        for block in re.findall(r"^```yaml\n(.*?)^```", page.read_text(), re.S | re.M):
            document = yaml.safe_load(block)
            if isinstance(document, dict) and document and set(document) <= keys:
                found.append((page.relative_to(ROOT).as_posix(), document))
    return found


def test_the_schema_accepts_the_shipped_and_documented_configs_and_refuses_a_typo() -> None:
    validator = jsonschema.Draft202012Validator(json.loads(docs_reference.schema_text()))
    shipped = [
        ROOT / "examples" / "retrieval_eval.yaml",
        ROOT / "examples" / "replays.yaml",
        ROOT / "examples" / "labelling.yaml",
    ]
    configs = [(str(path), yaml.safe_load(path.read_text())) for path in shipped]
    documented = _config_blocks()
    assert len(configs) >= 2 and len(documented) >= 10
    for where, document in configs + documented:
        errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(document)]
        assert not errors, f"{where}: {errors}"
    wrong = {"thresholds": {"max_top1_dorp": 0.1}}  # what an editor should flag
    assert not validator.is_valid(wrong)
    assert validator.is_valid({"thresholds": {"max_top5_drop": 0.1}, "lint": "warn"})


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site built as `make docs` builds it, into a temporary folder."""
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [str(BIN / "mkdocs"), "build", "--strict", "--quiet", "-d", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"NO_MKDOCS_2_WARNING": "1", "PATH": f"{BIN}:/usr/bin:/bin"},
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def test_the_built_reference_has_every_command_and_option(site: Path) -> None:
    page = html.unescape(re.sub(r"<[^>]+>", " ", (site / "reference" / "cli.html").read_text()))
    text = " ".join(page.split())
    for path, command in COMMANDS:
        assert path in text, f"{path} is missing from the CLI reference"
        for option in _options(command):
            assert option.opts[0] in text, f"{path} {option.opts[0]} is missing"
    assert len(OLD_SPELLINGS) >= 6  # history, show, report, export-run, prune, baseline
    for path, _ in OLD_SPELLINGS:  # hidden aliases: kept working, not documented
        assert f"{path} " not in text, f"the old spelling {path} is in the CLI reference"


def test_the_built_site_has_the_generated_pages(site: Path) -> None:
    config = (site / "reference" / "config.html").read_text()
    assert "max_top1_drop" in config and "store_connection_id" in config
    assert "InvalidRunError" in (site / "reference" / "exit-codes.html").read_text()
    assert "eval_result_question" in (site / "reference" / "store-schema.html").read_text()
    assert "top1_hit_rate_ci" in (site / "reference" / "json-contract.html").read_text()
    api = (site / "reference" / "api.html").read_text()
    anchors = set(re.findall(r'id="retrieval_eval\.[\w.]*\.(\w+)"', api))
    missing = set(retrieval_eval.__all__) - anchors  # every exported name has its entry
    assert not missing, missing
    assert json.loads((site / "schema" / "retrieval_eval.schema.json").read_text())
    assert (site / "images" / "dashboard.png").stat().st_size < 200_000


# a `retrieval-eval[` that is not this project's distribution, nor a path (`./retrieval-eval[`),
# nor inside `rag-retrieval-eval[`; and a bare `pip install (-U) retrieval-eval`
FOREIGN = re.compile(r"(?<![-/\w])retrieval-eval\[|pip install (?:-\S+ )*retrieval-eval\b(?!\[)")
SCANNED = ("retrieval_eval", "benchmarks", "tests", "tools", "docs", "examples", "dags", "plugins")


def _texts() -> Iterator[tuple[str, str]]:
    for name in ("README.md", "CONTRIBUTING.md", "CHANGELOG.md", "Makefile", "pyproject.toml"):
        yield name, (ROOT / name).read_text(encoding="utf-8")
    for folder in SCANNED:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix in {".py", ".md", ".txt", ".yaml", ".html", ".toml", ".cfg"}:
                yield path.relative_to(ROOT).as_posix(), path.read_text(encoding="utf-8")


def test_every_install_hint_names_the_distribution() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == DISTRIBUTION == "rag-retrieval-eval"
    assert f"{DISTRIBUTION}[webui]" in project["optional-dependencies"]["airflow"]
    for extra, _ in ADAPTER_EXTRAS.values():
        assert pip_command(extra) == f"pip install '{DISTRIBUTION}[{extra}]'"
    offending = [
        f"{name}:{text.count(chr(10), 0, m.start()) + 1}: {m[0]}"
        for name, text in _texts()
        if name != "tests/test_docs_reference.py"
        for m in FOREIGN.finditer(text)
    ]
    assert not offending, f"install hints that would fetch another project: {offending}"


def test_the_hint_pattern_catches_the_other_project_and_spares_ours() -> None:
    assert FOREIGN.search("pip install 'retrieval-eval[qdrant]'")
    assert FOREIGN.search("pip install --upgrade retrieval-eval")
    assert not FOREIGN.search("pip install 'rag-retrieval-eval[qdrant]'")
    assert not FOREIGN.search("pip install './retrieval-eval[airflow]'")
    assert not FOREIGN.search("retrieval-eval run SET RETRIEVER")
