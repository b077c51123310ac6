"""Documents and rows derived from an entity's dataclass fields and their type hints.

One rule per kind of value, applied field by field (nested dataclasses recursively):

    value                       document (JSON)                  row (a column)
    enum                        its value                        its value
    datetime                    ISO 8601 text                    as is
    time of day                 "HH:MM" (TimeWindow's bounds)    (only inside documents)
    Decimal                     text                             as is
    UUID (and NewType ids)      text                             as is
    int, float, bool, str       as is (float() / int() on read)  as is
    dict[..., Any] and the like as is (a copy on read)           as is (a copy on read)
    tuple / list                a list of encoded elements       a JSON document
    nested dataclass            an object (or a list, if         a JSON document (or flattened
                                `positional`)                    into columns, if declared)
    X | None                    null for None; read, a falsy     null for None
                                value is None too, unless X is
                                plain or a collection

Reading, a key missing from a document takes the field's default (documents written before the
field existed), and None for a list or a dict reads as an empty one. Everything that does not
follow these rules is a `Field` exception declared beside the entity's `Shape`.
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
import uuid
from collections.abc import Callable, Mapping
from datetime import datetime, time
from decimal import Decimal
from itertools import repeat
from typing import Any, TypeVar

_PLAIN = (bool, int, float, str)
E = TypeVar("E")


@dataclasses.dataclass(frozen=True)
class Field:
    """How one field departs from the rules."""

    key: str | None = None
    """Its document key or column, when it is not the field's name."""
    encode: Callable[[Any], Any] | None = None
    decode: Callable[[Any], Any] | None = None
    stored: bool = True
    """False: never written; read back as its default."""
    columns: Mapping[str, str] | None = None
    """In a row only: a nested dataclass spread over columns (its field -> the column)."""


@dataclasses.dataclass(frozen=True)
class Shape:
    """An entity's exceptions to the rules (in documents and in rows)."""

    cls: type
    document: Mapping[str, Field] = dataclasses.field(default_factory=dict)
    row: Mapping[str, Field] = dataclasses.field(default_factory=dict)
    positional: bool = False
    """Its document is a list of its fields' values in their order (compact)."""


def flat(cls: type) -> dict[str, str]:
    """Every field of `cls` as a column of the same name."""
    return {f.name: f.name for f in dataclasses.fields(cls)}


_HINTS: dict[type, dict[str, Any]] = {}


def hints(cls: type) -> dict[str, Any]:
    """The resolved type of each field of `cls` (once per class)."""
    found = _HINTS.get(cls)
    if found is None:
        found = _HINTS[cls] = typing.get_type_hints(cls)
    return found


def _unwrap(hint: Any) -> Any:
    while hasattr(hint, "__supertype__"):  # NewType
        hint = hint.__supertype__
    return hint


def _optional(hint: Any) -> Any | None:
    """X for `X | None`, else None."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) == 1 and len(typing.get_args(hint)) == 2:
            return args[0]
        raise TypeError(f"only X | None is supported, not {hint}")
    return None


Convert = Callable[[Any], Any]


def _identity(value: Any) -> Any:
    return value


class Shapes:
    """A registry of shapes, and the conversions derived from them: compiled once per type (a
    list of the fields and their converters), then run without looking at a type again."""

    def __init__(self, *shapes: Shape) -> None:
        self._shapes = {s.cls: s for s in shapes}
        self._encoders: dict[Any, Convert] = {}
        self._decoders: dict[Any, Convert] = {}
        self._row_encoders: dict[type, Callable[[Any], dict[str, Any]]] = {}
        self._row_decoders: dict[type, Callable[[Mapping[Any, Any], dict[str, Any]], Any]] = {}

    def shape(self, cls: type) -> Shape:
        return self._shapes.get(cls) or Shape(cls)

    # --- documents ---------------------------------------------------------------------------

    def to_document(self, value: Any, hint: Any = None) -> Any:
        return self._encoder(type(value) if hint is None else hint)(value)

    def from_document(self, doc: Any, hint: Any) -> Any:
        return self._decoder(hint)(doc)

    def encoder(self, cls: type[E]) -> Callable[[E], Any]:
        """`cls` to its document."""
        return self._encoder(cls)

    def decoder(self, cls: type[E]) -> Callable[[Any], E]:
        """`cls` from its document."""
        return self._decoder(cls)

    def _encoder(self, hint: Any) -> Convert:
        found = self._encoders.get(hint)
        if found is None:
            found = self._encoders[hint] = self._compile_encoder(_unwrap(hint))
        return found

    def _decoder(self, hint: Any) -> Convert:
        found = self._decoders.get(hint)
        if found is None:
            found = self._decoders[hint] = self._compile_decoder(_unwrap(hint))
        return found

    def _compile_encoder(self, hint: Any) -> Convert:
        inner = _optional(hint)
        if inner is not None:
            return self._encoder(inner)  # every encoder passes None through
        origin = typing.get_origin(hint) or hint
        if hint is Any or origin in (dict, Mapping):
            return _identity
        if origin in (tuple, list, frozenset, set):
            args = typing.get_args(hint)
            if _fixed(hint):
                items = [self._encoder(a) for a in args]
                return _none_or(lambda v: [f(x) for f, x in zip(items, v, strict=True)])
            item = self._encoder(args[0]) if args else _identity
            return _none_or(lambda v: [item(x) for x in v])
        if isinstance(hint, type):
            if issubclass(hint, enum.Enum):
                return _none_or(lambda v: v.value)
            if issubclass(hint, datetime):
                return _none_or(lambda v: v.isoformat())
            if issubclass(hint, time):
                return _none_or(lambda v: v.strftime("%H:%M"))
            if issubclass(hint, Decimal | uuid.UUID):
                return _none_or(str)
            if dataclasses.is_dataclass(hint):
                return self._dataclass_encoder(hint)
        return _identity

    def _dataclass_encoder(self, cls: type) -> Convert:
        plan: list[tuple[str, str, Convert]] = []
        names: list[str] = []
        keys: list[str] = []
        converts: list[Convert] = []
        shape = self.shape(cls)

        def compile_plan() -> None:  # on first use: an entity may hold its own type
            types_ = hints(cls)
            rules = [(f.name, shape.document.get(f.name, Field())) for f in dataclasses.fields(cls)]
            found = [
                (name, rule.key or name, rule.encode or self._encoder(types_[name]))
                for name, rule in rules
                if rule.stored
            ]
            names.extend(n for n, _, _ in found)
            keys.extend(k for _, k, _ in found)
            converts.extend(c for _, _, c in found)
            plan.extend(found)

        def encode(value: Any) -> Any:
            if value is None:
                return None
            if not plan:
                compile_plan()
            values = [
                v if convert is _identity else convert(v)
                for v, convert in zip(map(getattr, repeat(value), names), converts, strict=True)
            ]
            return values if shape.positional else dict(zip(keys, values, strict=True))

        return encode

    def _compile_decoder(self, hint: Any) -> Convert:
        inner = _optional(hint)
        if inner is not None:
            decode = self._decoder(inner)
            if _plain(_unwrap(inner)) or _collection(inner):
                return lambda doc: None if doc is None else decode(doc)
            return lambda doc: decode(doc) if doc else None
        origin = typing.get_origin(hint) or hint
        if hint is Any:
            return _identity
        if origin in (dict, Mapping):
            return lambda doc: dict(doc or {})
        if origin in (tuple, list, frozenset, set):
            args = typing.get_args(hint)
            make: Callable[[Any], Any] = list if origin is list else origin
            if _fixed(hint):
                items = [self._decoder(a) for a in args]
                return lambda doc: make([f(x) for f, x in zip(items, doc or (), strict=True)])
            item = self._decoder(args[0]) if args else _identity
            if item is _identity:
                return lambda doc: make(doc or ())
            return lambda doc: make([item(x) for x in doc or ()])
        if isinstance(hint, type):
            if issubclass(hint, enum.Enum):
                return hint
            if issubclass(hint, datetime):
                return lambda doc: doc if isinstance(doc, datetime) else datetime.fromisoformat(doc)
            if issubclass(hint, time):
                return lambda doc: doc if isinstance(doc, time) else time.fromisoformat(doc)
            if issubclass(hint, Decimal):
                return lambda doc: Decimal(str(doc))
            if issubclass(hint, uuid.UUID):
                return lambda doc: doc if isinstance(doc, uuid.UUID) else uuid.UUID(doc)
            if hint in (bool, int, float):
                return hint
            if dataclasses.is_dataclass(hint):
                return self._dataclass_decoder(hint)
        return _identity

    def _dataclass_decoder(self, cls: type) -> Convert:
        plan: list[tuple[str, str, bool, Convert]] = []
        shape = self.shape(cls)

        def compile_plan() -> None:
            types_ = hints(cls)
            found = []
            for f in dataclasses.fields(cls):
                rule = shape.document.get(f.name, Field())
                if f.init and rule.stored:
                    key = f.name if shape.positional else rule.key or f.name
                    convert = rule.decode or self._decoder(types_[f.name])
                    found.append((f.name, key, _has_default(f), convert))
            plan.extend(found)

        def decode(doc: Any) -> Any:
            if not plan:
                compile_plan()
            if shape.positional:
                doc = dict(zip([name for name, *_ in plan], doc, strict=True))
            kwargs: dict[str, Any] = {}
            for name, key, optional, convert in plan:
                if key in doc:
                    value = doc[key]
                    kwargs[name] = value if convert is _identity else convert(value)
                elif not optional:
                    raise KeyError(key)
            return cls(**kwargs)

        return decode

    # --- rows --------------------------------------------------------------------------------

    def to_row(self, entity: Any) -> dict[str, Any]:
        cls = type(entity)
        found = self._row_encoders.get(cls)
        if found is None:
            found = self._row_encoders[cls] = self._compile_row_encoder(cls)
        return found(entity)

    def from_row(self, cls: type[Any], row: Mapping[Any, Any], **given: Any) -> Any:
        """`given`: fields that are not columns of the row (e.g. a cluster's nodes)."""
        found = self._row_decoders.get(cls)
        if found is None:
            found = self._row_decoders[cls] = self._compile_row_decoder(cls)
        return found(row, given)

    def row_decoder(self, cls: type[E]) -> Callable[[Mapping[Any, Any]], E]:
        """`cls` from its row."""
        return lambda row: self.from_row(cls, row)

    def _compile_row_encoder(self, cls: type) -> Callable[[Any], dict[str, Any]]:
        shape, types_ = self.shape(cls), hints(cls)
        plan: list[tuple[str, str, str | None, Convert]] = []  # field, column, its part, how
        for f in dataclasses.fields(cls):
            rule = shape.row.get(f.name, Field())
            if not rule.stored:
                continue
            if rule.columns is not None:
                sub = hints(_unwrap(types_[f.name]))
                for part, column in rule.columns.items():
                    plan.append((f.name, column, part, self._column(sub[part])))
            else:
                convert = rule.encode or self._column(types_[f.name])
                plan.append((f.name, rule.key or f.name, None, convert))

        def encode(entity: Any) -> dict[str, Any]:
            row: dict[str, Any] = {}
            for name, column, part, convert in plan:
                value = getattr(entity, name)
                if part is not None:
                    value = getattr(value, part)
                row[column] = value if convert is _identity else convert(value)
            return row

        return encode

    def _compile_row_decoder(self, cls: type) -> Callable[[Mapping[Any, Any], dict[str, Any]], Any]:
        shape, types_ = self.shape(cls), hints(cls)
        plan: list[tuple[str, str | None, Convert]] = []  # field, its column (or None), how
        for f in dataclasses.fields(cls):
            rule = shape.row.get(f.name, Field())
            if not f.init or not rule.stored:
                continue
            if rule.columns is not None:
                plan.append((f.name, None, self._parts(_unwrap(types_[f.name]), rule.columns)))
            else:
                convert = rule.decode or self._from_column(types_[f.name])
                plan.append((f.name, rule.key or f.name, convert))

        def decode(row: Mapping[Any, Any], given: dict[str, Any]) -> Any:
            kwargs = dict(given)
            for name, column, convert in plan:
                if name in given:
                    continue
                if column is None:
                    kwargs[name] = convert(row)
                else:
                    value = row[column]
                    kwargs[name] = value if convert is _identity else convert(value)
            return cls(**kwargs)

        return decode

    def _parts(
        self, part_cls: type, columns: Mapping[str, str]
    ) -> Callable[[Mapping[Any, Any]], Any]:
        sub = hints(part_cls)
        reads = [(part, column, self._from_column(sub[part])) for part, column in columns.items()]
        return lambda row: part_cls(**{part: d(row[c]) for part, c, d in reads})

    def _column(self, hint: Any) -> Convert:
        base = _unwrap(_optional(_unwrap(hint)) or hint)
        if isinstance(base, type) and issubclass(base, enum.Enum):
            return _none_or(lambda v: v.value)
        if _native(base):
            return _identity
        return self._encoder(hint)

    def _from_column(self, hint: Any) -> Convert:
        optional = _optional(_unwrap(hint)) is not None
        base = _unwrap(_optional(_unwrap(hint)) or hint)
        if isinstance(base, type) and issubclass(base, Decimal):
            return _none_or(lambda v: Decimal(str(v)))
        if _native(base) and not issubclass(base, enum.Enum):
            return _identity
        decode = self._decoder(hint)
        return (lambda v: None if v is None else decode(v)) if optional else decode


def _none_or(convert: Convert) -> Convert:
    return lambda v: None if v is None else convert(v)


def _fixed(hint: Any) -> bool:
    """A tuple of so many values of their own types (not `tuple[X, ...]`)."""
    args = typing.get_args(hint)
    return (
        typing.get_origin(hint) is tuple
        and bool(args)
        and not (len(args) == 2 and args[1] is Ellipsis)
    )


def _plain(hint: Any) -> bool:
    """bool, int, float or str (whose falsy values are values), not an enum."""
    return isinstance(hint, type) and issubclass(hint, _PLAIN) and not issubclass(hint, enum.Enum)


def _collection(hint: Any) -> bool:
    """An empty one is a value, not None (a token limited to no project)."""
    origin = typing.get_origin(hint) or hint
    return origin in (tuple, list, frozenset, set, dict, Mapping)


def _native(hint: Any) -> bool:
    """A value a column holds as it is."""
    return isinstance(hint, type) and issubclass(hint, (datetime, Decimal, uuid.UUID, *_PLAIN))


def _has_default(f: dataclasses.Field[Any]) -> bool:
    return f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
