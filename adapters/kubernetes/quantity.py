"""Kubernetes resource quantities ("96", "250m", "515863796Ki", "1e3") as exact Decimals.

The grammar is apimachinery's (k8s.io/apimachinery/pkg/api/resource): a signed decimal number and
at most one suffix, which is binary SI (Ki Mi Gi Ti Pi Ei: powers of 1024), decimal SI (n u m k M
G T P E: powers of 1000) or a decimal exponent (e3, E-2). "1E" is one exa, "1E3" is a thousand.
Decimal keeps "0.1" and "100m" equal, which floats would not.
"""

from __future__ import annotations

import re
from decimal import Decimal

_QUANTITY = re.compile(
    r"(?P<number>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?[0-9]+|[numkMGTPE])?"
)
_MULTIPLIERS: dict[str, Decimal] = {
    "Ki": Decimal(2**10),
    "Mi": Decimal(2**20),
    "Gi": Decimal(2**30),
    "Ti": Decimal(2**40),
    "Pi": Decimal(2**50),
    "Ei": Decimal(2**60),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal(10**3),
    "M": Decimal(10**6),
    "G": Decimal(10**9),
    "T": Decimal(10**12),
    "P": Decimal(10**15),
    "E": Decimal(10**18),
}
_MAX_EXPONENT = 100
"""A bound on e/E exponents, so junk such as "1e999999999" is refused instead of computed."""

BYTES_PER_GIB = Decimal(2**30)


def parse_quantity(text: str) -> Decimal:
    """The value of a Kubernetes quantity; ValueError when `text` is not one."""
    if not isinstance(text, str):
        raise ValueError(f"{text!r} is not a Kubernetes quantity: expected a string")
    match = _QUANTITY.fullmatch(text)
    if match is None:
        raise ValueError(f"{text!r} is not a Kubernetes quantity (e.g. 96, 250m, 512Gi, 1e3)")
    value = Decimal(match["number"])
    suffix = match["suffix"]
    if suffix is None:
        return value
    if suffix[0] in "eE" and len(suffix) > 1:
        exponent = int(suffix[1:])
        if abs(exponent) > _MAX_EXPONENT:
            raise ValueError(f"{text!r} is not a Kubernetes quantity: exponent out of range")
        return value.scaleb(exponent)
    return value * _MULTIPLIERS[suffix]


def whole_count(text: str, *, what: str) -> int:
    """A device count (an extended resource such as nvidia.com/gpu), which must be whole."""
    value = parse_quantity(text)
    if value != value.to_integral_value() or value < 0:
        raise ValueError(f"{what}: {text!r} is not a whole, non-negative device count")
    return int(value)
