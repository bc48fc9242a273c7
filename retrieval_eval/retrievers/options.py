"""Shared plumbing for adapter options: validation with clear errors and config-relative paths.

Every adapter declares its options as a pydantic model and calls :func:`parse_options`; a bad
option becomes a :class:`ConfigError` naming ``retrievers.<id>.<field>`` and the config file.
Fields typed :data:`ConfigPath` resolve relative paths against the config file's folder, so a
config works from any working directory.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, ClassVar, Self, TypeVar

from pydantic import BaseModel, ValidationError, ValidationInfo
from pydantic.functional_validators import AfterValidator

from retrieval_eval.errors import ConfigError

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class BuildContext:
    """What an adapter may need beyond its options."""

    base_dir: Path = field(default_factory=Path.cwd)
    source: str = "<config>"
    # builds a nested retriever from an inline spec (used by wrappers such as ``chunked``)
    build: Callable[[str, Mapping[str, Any]], Any] | None = None

    def where(self, identifier: str) -> str:
        """``<config>: retrievers.<id>``: how every message about a retriever's options starts."""
        return f"{self.source}: retrievers.{identifier}"


def resolve_path(value: Path, info: ValidationInfo) -> Path:
    """``value`` against the config file's folder (the validation context's ``base_dir``)."""
    base = (info.context or {}).get("base_dir")
    value = value.expanduser()
    if base is not None and not value.is_absolute():
        value = Path(base) / value
    return value


ConfigPath = Annotated[Path, AfterValidator(resolve_path)]


def existing_folders(value: list[Path]) -> list[Path]:
    """``paths:`` folders (already resolved against the config's folder) that must exist."""
    missing = [str(folder) for folder in value if not folder.is_dir()]
    if missing:
        raise ValueError(f"no such folder: {', '.join(missing)}")
    return [folder.resolve() for folder in value]


# folders put on sys.path before a module the config names (a factory, an embedding function)
# is imported: `type: python`'s `paths:`, and every adapter's
ImportPaths = Annotated[list[ConfigPath], AfterValidator(existing_folders)]


def parse_options(
    model: type[M], identifier: str, options: Mapping[str, Any], context: BuildContext
) -> M:
    try:
        return model.model_validate(dict(options), context={"base_dir": context.base_dir})
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            loc = ".".join(str(p) for p in err["loc"])
            msg = err["msg"].removeprefix("Value error, ")
            if err["type"] == "extra_forbidden":
                msg = "unknown option; allowed: " + ", ".join(sorted(model.model_fields))
            problems.append(f"{context.where(identifier)}.{loc}: {msg}")
        raise ConfigError("\n".join(problems)) from None


class OptionsAdapter:
    """An adapter built from its options: :meth:`from_options` checks the config's options
    against ``options_model`` (:func:`parse_options`) and hands them to :meth:`from_checked`,
    with the prefix of every other message about them (:meth:`BuildContext.where`)."""

    options_model: ClassVar[type[BaseModel]]

    @classmethod
    def from_options(
        cls, identifier: str, options: Mapping[str, Any], context: BuildContext
    ) -> Self:
        opts = parse_options(cls.options_model, identifier, options, context)
        return cls.from_checked(identifier, opts, context.where(identifier), context)

    @classmethod
    def from_checked(cls, identifier: str, opts: Any, where: str, context: BuildContext) -> Self:
        """The retriever from its checked options (an instance of ``options_model``)."""
        raise NotImplementedError
