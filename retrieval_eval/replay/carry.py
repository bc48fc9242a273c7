"""Build one record from another by field name: the one home for "each field of the same name,
copied over", which the store, the replay pipeline and the dashboard's replay views all need.

The source is a dataclass (a stored replay, a replay outcome, a changed query): its declared
fields are what is carried, never other attributes or properties. The target is a pydantic
model or a dataclass; what the caller gives by keyword wins, and a target field the source does
not have keeps its default.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import fields, is_dataclass
from typing import Any, TypeVar

_Target = TypeVar("_Target")


def same_named(source: Any, names: Iterable[str], given: Collection[str] = ()) -> dict[str, Any]:
    """The fields of the dataclass ``source`` that ``names`` holds and ``given`` does not, with
    their values: keyword arguments, or a row's columns."""
    wanted = set(names) - set(given)
    return {f.name: getattr(source, f.name) for f in fields(source) if f.name in wanted}


def carried(target: type[_Target], source: Any, **given: Any) -> _Target:
    """``target`` from ``given`` and, for each of its other fields, the same-named field of the
    dataclass ``source``."""
    if is_dataclass(target):
        names: Iterable[str] = (f.name for f in fields(target) if f.init)
    else:
        names = target.model_fields  # type: ignore[attr-defined]  # a pydantic model
    return target(**same_named(source, names, given), **given)
