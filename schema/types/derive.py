"""A GraphQL type built from a domain entity by its declared fields.

The Strawberry type declares its fields (the contract: names, types, nullability,
descriptions); `derive` fills each from the entity's attribute of the same name, converted to the
field's type: ids as text, lists as lists, a nested type by its own `from_domain` (or derived the
same way). What is named or computed otherwise is given explicitly, as keyword arguments.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

import strawberry
from strawberry.types.base import StrawberryList, StrawberryOptional, has_object_definition

T = TypeVar("T")


def derive(cls: type[T], entity: Any, **given: Any) -> T:
    """`cls` from `entity`: `given` fields as given, the others copied from the entity (a
    field with a default that the entity lacks keeps its default)."""
    types = {
        f.python_name: f.type
        for f in cls.__strawberry_definition__.fields  # type: ignore[attr-defined]
        if f.base_resolver is None
    }
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if not f.init:
            continue
        if f.name in given:
            kwargs[f.name] = given.pop(f.name)
        elif hasattr(entity, f.name):
            kwargs[f.name] = convert(getattr(entity, f.name), types.get(f.name))
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise TypeError(f"{cls.__name__}.{f.name}: {type(entity).__name__} has no such field")
    if given:
        raise TypeError(f"{cls.__name__} has no fields {sorted(given)}")
    return cls(**kwargs)


def convert(value: Any, gql_type: Any) -> Any:
    """A domain value as a field of `gql_type` holds it (None: a private field, as it is)."""
    if value is None or gql_type is None:
        return value
    if isinstance(gql_type, StrawberryOptional):
        return convert(value, gql_type.of_type)
    if isinstance(gql_type, StrawberryList):
        return [convert(v, gql_type.of_type) for v in value]
    if gql_type is strawberry.ID:
        return strawberry.ID(str(value))
    if isinstance(gql_type, type) and has_object_definition(gql_type):
        own = getattr(gql_type, "from_domain", None)
        return own(value) if own is not None else derive(gql_type, value)
    return value
