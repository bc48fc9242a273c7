"""Which optional extra each adapter type needs, and the error that names its pip command."""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

from retrieval_eval import DISTRIBUTION
from retrieval_eval.errors import ConfigError

# adapter type -> (extra, the module whose presence means the extra is installed)
ADAPTER_EXTRAS: dict[str, tuple[str, str]] = {
    "dense": ("dense", "sentence_transformers"),
    "langchain": ("langchain", "langchain_core"),
    "qdrant": ("qdrant", "qdrant_client"),
    "chroma": ("chroma", "chromadb"),
    "lancedb": ("lancedb", "lancedb"),
    "llamaindex": ("llamaindex", "llama_index.core"),
    "haystack": ("haystack", "haystack"),
}


def pip_command(extra: str) -> str:
    """The command that installs an extra, by the distribution's name (never the bare
    ``retrieval-eval``, another project's name on PyPI); from a checkout, ``pip install
    '.[EXTRA]'`` does the same."""
    return f"pip install '{DISTRIBUTION}[{extra}]'"


def installed(type_name: str) -> bool | None:
    """Whether an adapter type's extra is importable; None for a type that needs none."""
    if type_name not in ADAPTER_EXTRAS:
        return None
    module = ADAPTER_EXTRAS[type_name][1]
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a parent package is missing (llama_index for llama_index.core)
        return False


def require(type_name: str, where: str) -> ModuleType:
    """Import the module an adapter type needs, or a ConfigError naming the pip command."""
    extra, module = ADAPTER_EXTRAS[type_name]
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ConfigError(
            f"{where}: the {type_name} adapter needs the extra {extra!r}, which is not installed "
            f"({exc}): {pip_command(extra)}"
        ) from None
