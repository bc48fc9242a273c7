"""retrieval_eval.store.trusted builds what validation builds, or refuses (NotPlain).

Random field values, plausible and not, for every model a stored run or its power figures are
made of: whenever :func:`trusted` accepts them, ``model_validate`` accepts them too and gives an
equal model, with the same fields set and values of the same types all the way down.
"""

from __future__ import annotations

import types
from datetime import UTC, datetime, timedelta, timezone
from enum import Enum
from typing import Any, Literal, Union, get_args, get_origin

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from retrieval_eval.evaluation.labels import DeadLabels
from retrieval_eval.evaluation.results import (
    Latency,
    QuestionResult,
    RunResult,
    RunSettings,
    SliceRates,
)
from retrieval_eval.judging.regression import SliceRegression, Verdict
from retrieval_eval.lint.models import PowerFigure, PowerReport
from retrieval_eval.store.models import StoredRun
from retrieval_eval.store.trusted import NotPlain, checked, trusted
from store.test_trusted_reads import _same

MODELS = [
    QuestionResult,
    SliceRates,
    Latency,
    RunSettings,
    DeadLabels,
    SliceRegression,
    Verdict,
    PowerFigure,
    PowerReport,
    RunResult,
    StoredRun,
]
JUNK = st.sampled_from([0, 1, 2.5, True, False, "x", "", None, [], {}, ["a"], [1.0, 2.0]])
# defaults that differ at each call (a new uuid, now): always given, to compare the two models
CHANGING = {"run_key", "started_at", "finished_at"}
ZONES = st.sampled_from([UTC, timezone(timedelta(hours=2)), None])


def plausible(annotation: Any, depth: int = 0) -> st.SearchStrategy[Any]:
    """Values of the annotation's type, and near misses validation would convert."""
    origin, args = get_origin(annotation), get_args(annotation)
    if annotation is Any:
        return st.one_of(JUNK, st.dictionaries(st.text(max_size=3), JUNK, max_size=2))
    if annotation is str:
        return st.text(max_size=4)
    if annotation is int:
        return st.integers(-3, 10**6)
    if annotation is float:
        return st.one_of(st.floats(allow_nan=False), st.integers(-3, 3))
    if annotation is bool:
        return st.one_of(st.booleans(), st.sampled_from([0, 1]))
    if annotation is type(None):
        return st.none()
    if annotation is datetime:
        moments = st.datetimes(timezones=ZONES)
        return st.one_of(
            moments,
            moments.map(lambda d: d.isoformat()),
            moments.map(lambda d: d.replace(tzinfo=UTC).isoformat()),
            st.just("2026-01-01T03:00:00Z"),
        )
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        values = [m.value for m in annotation]
        return st.one_of(st.sampled_from(list(annotation)), st.sampled_from(values))
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        if depth > 2:
            return JUNK
        return fields_of(annotation, depth + 1)
    if origin in (Union, types.UnionType):
        return st.one_of(*(plausible(arg, depth) for arg in args))
    if origin is Literal:
        return st.sampled_from([*args, "other"])
    if origin is list:
        return st.lists(plausible(args[0], depth), max_size=3)
    if origin is dict:
        return st.dictionaries(st.text(max_size=3), plausible(args[1], depth), max_size=3)
    if origin is tuple:
        items = st.tuples(*(plausible(arg, depth) for arg in args))
        return st.one_of(items, items.map(list))
    raise AssertionError(f"no strategy for {annotation!r}")


def _exact(annotation: Any, depth: int) -> st.SearchStrategy[Any]:
    """Values of exactly the type validation returns (what a store gives back, mostly)."""
    origin, args = get_origin(annotation), get_args(annotation)
    if annotation is float:
        return st.floats(allow_nan=False)
    if annotation is bool:
        return st.booleans()
    if annotation is datetime:
        moments = st.datetimes(timezones=st.just(UTC))
        return st.one_of(moments, moments.map(lambda d: d.isoformat()))
    if origin is Literal:
        return st.sampled_from(args)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return whole(annotation, depth + 1)
    if origin in (Union, types.UnionType):
        return st.one_of(*(_exact(arg, depth) for arg in args))
    if origin is list:
        return st.lists(_exact(args[0], depth), max_size=3)
    if origin is dict:
        return st.dictionaries(st.text(max_size=3), _exact(args[1], depth), max_size=3)
    if origin is tuple:
        return st.tuples(*(_exact(arg, depth) for arg in args)).map(list)
    return plausible(annotation, depth)


def whole(cls: type[BaseModel], depth: int = 0) -> st.SearchStrategy[dict[str, Any]]:
    """Every required field, some optional ones, each of exactly its type."""
    fields = {name: _exact(info.annotation, depth) for name, info in cls.model_fields.items()}
    required = {n for n, info in cls.model_fields.items() if info.is_required() or n in CHANGING}
    return st.fixed_dictionaries(
        {name: fields[name] for name in required},
        optional={name: fields[name] for name in fields if name not in required},
    )


def fields_of(cls: type[BaseModel], depth: int = 0) -> st.SearchStrategy[dict[str, Any]]:
    """Each field left out, plausible or junk; sometimes a key that is no field."""
    optional = {
        name: st.one_of(plausible(info.annotation, depth), JUNK)
        for name, info in cls.model_fields.items()
    }
    changing = {name: optional.pop(name) for name in CHANGING & set(optional)}
    return st.fixed_dictionaries(changing, optional=optional | {"not_a_field": JUNK})


@settings(
    derandomize=True,
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
@pytest.mark.parametrize("cls", MODELS, ids=lambda cls: cls.__name__)
def test_what_trusted_builds_is_what_validation_builds(cls: type[BaseModel], data: Any) -> None:
    values = data.draw(st.one_of(fields_of(cls), whole(cls)))
    try:
        fast = trusted(cls, values)
    except NotPlain:
        return
    try:
        slow = cls.model_validate(values)
    except ValidationError as exc:
        raise AssertionError(f"trusted accepted what validation refuses: {exc}") from None
    assert fast == slow
    _same(fast, slow, cls.__name__)


def test_plain_values_are_trusted_and_near_misses_are_not() -> None:
    base = {"questions": 4, "top1_hits": 1, "top3_hits": 2, "top1_hit_rate": 0.25}
    rates = trusted(SliceRates, {**base, "top3_hit_rate": None})
    assert rates == SliceRates(**base, top3_hit_rate=None)
    for wrong in ({"top3_hit_rate": 1}, {"top3_hit_rate": True}, {"questions": 4.0}, {}):
        with pytest.raises(NotPlain):
            trusted(SliceRates, {**base, "top3_hit_rate": 0.5, **wrong} if wrong else base)
    verdict = trusted(Verdict, {"state": "regression", "top1_delta_ci": [-0.5, 0.25]})
    assert verdict.top1_delta_ci == (-0.5, 0.25)
    assert verdict.model_fields_set == {"state", "top1_delta_ci"}
    assert verdict.flipped_to_miss == [] and verdict.compared_questions is None
    for state in ("REGRESSION", "nope"):
        with pytest.raises(NotPlain):
            trusted(Verdict, {"state": state})


@pytest.mark.parametrize(
    "moment",
    [
        "2024-02-30T23:59:59+00:00",  # the shape, but no such day
        "2024-01-01T24:00:00+00:00",
        "2024-01-01T23:59:60+00:00",
        "2024-13-01T00:00:00+00:00",
        "0000-01-01T00:00:00+00:00",
        "\u0662\u0660\u0662\u0664-01-01T00:00:00+00:00",  # Arabic-Indic digits
    ],
)
def test_a_timestamp_validation_refuses_is_not_plain(moment: str) -> None:
    """Handed to validation, whose error a corrupted store then shows, as before."""
    with pytest.raises(NotPlain):
        trusted(_When, {"at": moment})
    with pytest.raises(ValidationError):
        checked(_When, {"at": moment})


class _When(BaseModel):
    model_config = ConfigDict(defer_build=True)
    at: datetime


class _Checked(BaseModel):
    model_config = ConfigDict(defer_build=True)
    n: int

    @field_validator("n")
    @classmethod
    def _positive(cls, value: int) -> int:
        if value < 0:
            raise ValueError("negative")
        return value


class _Constrained(BaseModel):
    model_config = ConfigDict(defer_build=True)
    n: int = Field(ge=0)


class _Strict(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid")
    n: int


class _DataFactory(BaseModel):
    model_config = ConfigDict(defer_build=True)
    n: int
    m: int = Field(default_factory=lambda data: data["n"])


@pytest.mark.parametrize(
    "cls,values",
    [(_Checked, {"n": -1}), (_Constrained, {"n": -1}), (_Strict, {"n": 1, "other": 2})],
)
def test_a_model_that_validation_may_refuse_is_never_trusted(
    cls: type[BaseModel], values: dict[str, Any]
) -> None:
    with pytest.raises(NotPlain):
        trusted(cls, values)
    with pytest.raises(ValidationError):
        checked(cls, values)  # validated instead, raising as validation raises


def test_a_default_only_validation_can_make_is_refused_when_needed() -> None:
    with pytest.raises(NotPlain):
        trusted(_DataFactory, {"n": 3})
    assert trusted(_DataFactory, {"n": 3, "m": 4}) == _DataFactory(n=3, m=4)
    assert checked(_DataFactory, {"n": 3}).m == 3
