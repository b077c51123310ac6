"""Random instances of any entity, derived from its dataclass fields (for property tests)."""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, time
from decimal import Decimal
from typing import Any

from hypothesis import assume
from hypothesis import strategies as st

from adapters.shapes.derive import hints

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)


Skip = Callable[[type, str], bool]


def instances(
    hint: Any,
    *,
    skip: Skip = lambda cls, name: False,
    given: Mapping[type, st.SearchStrategy[Any]] | None = None,
) -> st.SearchStrategy[Any]:
    """Every value `hint` allows (within reason); `skip(cls, field)`: left to its default;
    `given`: the instances of some types (e.g. those that check their own contents)."""
    if given and hint in given:
        return given[hint]
    while hasattr(hint, "__supertype__"):
        hint = hint.__supertype__
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return st.one_of(*(instances(a, skip=skip, given=given) for a in args))
    if hint is type(None):
        return st.none()
    if hint is Any:
        return _JSON
    if origin in (dict, Mapping):
        key, value = args or (str, Any)
        return st.dictionaries(
            instances(key, skip=skip, given=given),
            instances(value, skip=skip, given=given),
            max_size=3,
        )
    if origin is frozenset:
        return st.frozensets(instances(args[0], skip=skip, given=given), max_size=3)
    if origin is list:
        return st.lists(instances(args[0], skip=skip, given=given), max_size=3)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return st.lists(instances(args[0], skip=skip, given=given), max_size=3).map(tuple)
        return st.tuples(*(instances(a, skip=skip, given=given) for a in args))
    assert isinstance(hint, type), hint
    if issubclass(hint, enum.Enum):
        return st.sampled_from(list(hint))
    if hint is bool:
        return st.booleans()
    if issubclass(hint, int):
        return st.integers(-(2**31), 2**31)
    if hint is float:  # whole thousandths: exact in JSON and in a sample's microseconds
        return st.integers(-(10**9), 10**9).map(lambda i: i / 1000)
    if hint is str:
        return st.text(max_size=8)
    if hint is bytes:
        return st.binary(max_size=8)
    if hint is datetime:
        return st.datetimes(timezones=st.just(UTC))
    if hint is time:
        return st.times().map(lambda t: t.replace(second=0, microsecond=0))
    if hint is Decimal:
        return st.decimals(allow_nan=False, allow_infinity=False, places=4)
    if hint is uuid.UUID:
        return st.uuids()
    if dataclasses.is_dataclass(hint):
        return _dataclass(hint, skip, given)
    raise TypeError(f"no instances of {hint}")


def _dataclass(
    cls: type, skip: Skip, given: Mapping[type, st.SearchStrategy[Any]] | None
) -> st.SearchStrategy[Any]:
    types = hints(cls)
    fields = {
        f.name: st.deferred(lambda h=types[f.name]: instances(h, skip=skip, given=given))  # type: ignore[misc]
        for f in dataclasses.fields(cls)
        if f.init and not skip(cls, f.name)
    }

    @st.composite
    def build(draw: st.DrawFn) -> Any:
        kwargs = {name: draw(s) for name, s in fields.items()}
        try:
            return cls(**kwargs)
        except (AssertionError, ValueError):  # its own checks refuse it
            assume(False)

    return build()


def plain(value: Any, *, skip: Skip = lambda cls, name: False) -> Any:
    """A dataclass as nested dicts of its fields (entities compare by identity)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: plain(getattr(value, f.name), skip=skip)
            for f in dataclasses.fields(value)
            if not skip(type(value), f.name)
        }
    if isinstance(value, list | tuple):
        return type(value)(plain(v, skip=skip) for v in value)
    return value
