"""Building pydantic models from values that are already what validation would make of them.

Validating a model the first time builds its schema, and the first schema of a process makes
pydantic discover its plugins (``importlib.metadata`` reading every installed distribution):
~0.1 s that ``show`` would spend to re-check values the store checked when it saved them. The
models are ``defer_build``; :func:`trusted` builds an instance without a schema when every
value is *plain*, i.e. of the exact type validation returns for its field, and raises
:class:`NotPlain` otherwise, for the caller to validate instead (:func:`checked` does both).

What counts as plain is read from the fields' annotations, never listed by hand: a field added
later is checked like the others, and a form not understood here makes its class untrusted
(always validated). Edge cases:

- Exact types only: an int for a ``float`` field, a bool for an ``int`` one, a subclass of
  ``str`` are not plain (validation would convert them).
- Converted as validation converts them: a list of two floats for ``tuple[float, float]``, an
  enum's value for the enum (its member; ``_missing_`` spellings are not plain), a dict for a
  nested model (built the same way), an ISO string ``YYYY-MM-DDTHH:MM:SS[.ffffff]+00:00`` for a
  ``datetime`` (with pydantic's own ``TzInfo(0)``, as it parses it).
- Lists and dicts are copied, as validation copies them; ``Any`` values are kept as they are.
- Fields left out take their defaults (default factories called) and stay out of
  ``model_fields_set``, as with validation; a required field left out is not plain (validation
  raises). Keys that are not fields are dropped (``extra="ignore"``, the default).
- A class with any ``model_config`` but ``defer_build``, validators, serializers, private
  attributes, aliases, constraints (``Field(ge=...)``) or a default factory taking the data is
  never trusted.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import types
from collections.abc import Callable
from datetime import datetime
from enum import Enum
from functools import partial
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo

M = TypeVar("M", bound=BaseModel)
Convert = Callable[[Any], Any]


class NotPlain(Exception):
    """A value (or a class) :func:`trusted` cannot vouch for: validate instead."""


# ASCII digits only: \d also matches other scripts' digits, which validation refuses
_UTC_ISO = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{6})?\+00:00")
_MISSING = object()
_ANY_ARGS = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS
Field = tuple[str, Convert, Any, "type | None"]
_compiled: dict[type, tuple[frozenset[str], list[Field]] | None] = {}
_new, _set = object.__new__, object.__setattr__


def checked(cls: type[M], values: dict[str, Any]) -> M:
    """``cls.model_validate(values)``, without building a schema when every value is plain."""
    try:
        return trusted(cls, values)
    except NotPlain:
        return cls.model_validate(values)


def trusted(cls: type[M], values: dict[str, Any]) -> M:
    """An instance of ``cls`` equal to ``cls.model_validate(values)``, or :class:`NotPlain`."""
    names, fields = _fields(cls)
    data: dict[str, Any] = {}
    if values.keys() == names:  # every field given, nothing else: a stored row, mostly
        for name, convert, _, kind in fields:
            value = values[name]
            data[name] = value if type(value) is kind else convert(value)  # convert: or raise
        given = set(names)
    else:
        given = set()
        for name, convert, default, _ in fields:
            value = values.get(name, _MISSING)
            if value is _MISSING:
                if default is _MISSING:
                    raise NotPlain(f"{cls.__name__}.{name} is required")
                data[name] = default()
            else:
                data[name] = convert(value)
                given.add(name)
    return assembled(cls, data, given)


def assembled(cls: type[M], data: dict[str, Any], fields_set: set[str]) -> M:
    """An instance of ``cls`` with ``data`` as its fields (every one, in declaration order) and
    ``fields_set`` as ``model_fields_set``: what validation builds, without validating. The
    caller vouches for every value (:func:`trusted`, ``QuestionResult.trusted``, the set
    loader's ordinary rows). BaseModel keeps ``object.__new__``; looking it up on ``cls`` costs
    more."""
    model = _new(cls)
    _set(model, "__dict__", data)
    _set(model, "__pydantic_fields_set__", fields_set)
    _set(model, "__pydantic_extra__", None)
    _set(model, "__pydantic_private__", None)
    return model


def _fields(cls: type[BaseModel]) -> tuple[frozenset[str], list[Field]]:
    """The field names, and each field's name, converter, default maker (or _MISSING) and
    exact type (or None), compiled once per class."""
    if cls not in _compiled:
        try:
            fields = _compile(cls)
            _compiled[cls] = (frozenset(name for name, *_ in fields), fields)
        except NotPlain:
            _compiled[cls] = None
    compiled = _compiled[cls]
    if compiled is None:
        raise NotPlain(f"{cls.__name__} is validated")
    return compiled


def _compile(cls: type[BaseModel]) -> list[Field]:
    decorators = cls.__pydantic_decorators__
    if (
        set(cls.model_config) - {"defer_build"}
        or cls.__private_attributes__
        or any(getattr(decorators, f.name) for f in dataclasses.fields(decorators))
        or not cls.__pydantic_fields_complete__
    ):
        raise NotPlain(cls.__name__)
    fields = []
    for name, info in cls.model_fields.items():
        if (
            info.alias is not None
            or info.validation_alias is not None
            or info.metadata
            or info.discriminator is not None
            or info.validate_default
            or info.init is False
        ):
            raise NotPlain(f"{cls.__name__}.{name}")
        convert = _converter(info.annotation)
        fields.append((name, convert, _default(info), _kind(convert)))
    return fields


def _default(info: FieldInfo) -> Any:
    """A maker of the field's default (_MISSING when required), as ``get_default`` makes it,
    or one raising NotPlain (a factory that may take the validated data, a class, a mutable
    default pydantic would deep-copy): only a field left out needs its default.

    Without ``get_default`` and ``default_factory_takes_validated_data``: both inspect the
    factory's signature, ~2 ms a field (``inspect`` parses a builtin's text signature)."""
    if info.is_required():
        return _MISSING
    factory = info.default_factory
    if factory is None:
        default = info.default
        if type(default) in (type(None), bool, int, float, str):
            return lambda: default
    elif factory in (list, dict):
        return factory
    elif isinstance(factory, types.FunctionType):
        code = factory.__code__
        if not (code.co_argcount or code.co_kwonlyargcount or code.co_flags & _ANY_ARGS):
            return factory
    return partial(_not_plain, "a default only validation makes")


def _not_plain(why: str) -> Any:
    raise NotPlain(why)


_EXACT: dict[type, Convert] = {}  # kind -> its converter: unions and lists look them up


def _exact(kind: type) -> Convert:
    if kind not in _EXACT:

        def convert(value: Any) -> Any:
            if type(value) is not kind:
                raise NotPlain(f"{type(value).__name__} for {kind.__name__}")
            return value

        _EXACT[kind] = convert
    return _EXACT[kind]


def _kind(convert: Convert) -> type | None:
    """The type an exact converter takes, else None."""
    return next((kind for kind, known in _EXACT.items() if known is convert), None)


def _keep(value: Any) -> Any:
    return value


def _converter(annotation: Any) -> Convert:
    """How to turn a plain value into the field's value (raising NotPlain otherwise)."""
    origin, args = get_origin(annotation), get_args(annotation)
    if annotation is Any:
        return _keep
    if annotation in (str, int, float, bool, type(None)):
        return _exact(annotation)
    if annotation is datetime:
        return _datetime
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return _enum(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return _model(annotation)
    if origin in (Union, types.UnionType):
        return _union([_converter(arg) for arg in args])
    if origin is Literal:
        return _literal(args)
    if origin is list and len(args) == 1:
        return _list(_converter(args[0]))
    if origin is dict and len(args) == 2 and args[0] is str:
        key, entry, is_dict = _exact(str), _converter(args[1]), _exact(dict)
        return lambda value: {key(k): entry(v) for k, v in is_dict(value).items()}
    if origin is tuple and args and Ellipsis not in args:
        return _tuple([_converter(arg) for arg in args])
    raise NotPlain(f"annotation {annotation!r}")


def _datetime(value: Any) -> datetime:
    if type(value) is datetime:
        return value  # validation keeps a datetime as it is
    if type(value) is str and _UTC_ISO.fullmatch(value):
        from pydantic_core import TzInfo

        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:  # the shape but no such moment (Feb 30, 24:00, a leap second)
            raise NotPlain(f"{value!r} for datetime") from None
        return parsed.replace(tzinfo=TzInfo(0))
    raise NotPlain(f"{value!r} for datetime")


def _enum(kind: type[Enum]) -> Convert:
    def convert(value: Any) -> Any:
        if type(value) is kind:
            return value
        if type(value) is str and value in kind._value2member_map_:
            return kind._value2member_map_[value]
        raise NotPlain(f"{value!r} for {kind.__name__}")

    return convert


def _model(kind: type[BaseModel]) -> Convert:
    def convert(value: Any) -> Any:
        if type(value) is kind:
            return value  # revalidate_instances="never": an instance is kept
        if type(value) is dict:
            return trusted(kind, value)
        raise NotPlain(f"{type(value).__name__} for {kind.__name__}")

    return convert


def _union(members: list[Convert]) -> Convert:
    # exact types (str | None, ...) by a lookup: trying each member costs an exception a miss
    kept = {kind for kind in map(_kind, members) if kind is not None}
    others = [member for member in members if _kind(member) is None]

    def convert(value: Any) -> Any:
        if type(value) in kept:
            return value
        for member in others:  # at most one member takes a value: the types are exact
            try:
                return member(value)
            except NotPlain:
                continue
        raise NotPlain(f"{value!r} for a union")

    return convert


def _list(item: Convert) -> Convert:
    kind = _kind(item)

    def convert(value: Any) -> Any:
        if type(value) is not list:
            raise NotPlain(f"{type(value).__name__} for a list")
        if kind is not None and all(type(v) is kind for v in value):
            return list(value)  # a copy, as validation makes
        return [item(v) for v in value]

    return convert


def _literal(choices: tuple[Any, ...]) -> Convert:
    allowed = {(type(c), c) for c in choices}
    kinds = {type(c) for c in choices}  # hashable: str, int, bool, an enum

    def convert(value: Any) -> Any:
        if type(value) not in kinds or (type(value), value) not in allowed:
            raise NotPlain(f"{value!r} for {choices}")
        return value

    return convert


def _tuple(items: list[Convert]) -> Convert:
    def convert(value: Any) -> Any:
        if type(value) not in (list, tuple) or len(value) != len(items):
            raise NotPlain(f"{value!r} for a tuple of {len(items)}")
        return tuple(item(v) for item, v in zip(items, value, strict=True))

    return convert
