"""Entities as JSON documents and as database rows, derived from their dataclass fields.

`derive` holds the rules (one per kind of value); `entities` declares each entity's few
exceptions; `documents` names the conversions the outbox, Redis and the stores use.
"""

from adapters.shapes.derive import Field, Shape, Shapes, flat

__all__ = ["Field", "Shape", "Shapes", "flat"]
