"""The page sizes a listing accepts (the `first` argument of a connection)."""

from __future__ import annotations

from domain.errors import ValidationFailed


def check_first(first: int, most: int) -> None:
    """Refuses a page of fewer than 1 or more than `most` items, on the field `first`."""
    if not 1 <= first <= most:
        raise ValidationFailed.single("first", f"must be between 1 and {most}")
