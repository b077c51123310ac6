"""Free-form documents users send (a request body, a job's spec, a kubeconfig): what makes one
unusable whatever its meaning.

One iterative walk (no input can exhaust the stack) finds the first of: nesting deeper than
allowed, more values than allowed (shared values counted each time they are reached, so a YAML
alias bomb counts as what it expands to), a key that is not text, and text no store or client
can carry (a lone UTF-16 surrogate, and NUL where it is not allowed). Each caller words it for
its own field.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Flaw(enum.Enum):
    TOO_DEEP = "nested deeper than allowed"
    TOO_MANY = "holds more values than allowed"
    KEY_NOT_TEXT = "has a key that is not text"
    SURROGATE = "holds a lone UTF-16 surrogate"
    NUL = "holds a NUL character"


@dataclass(frozen=True)
class Problem:
    flaw: Flaw
    path: str
    """Where, as `a.b[2].c`; empty for the document itself."""


def _path(parts: tuple[str | int, ...]) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def _text_flaw(text: str, allow_nul: bool) -> Flaw | None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return Flaw.SURROGATE
    if not allow_nul and "\x00" in text:
        return Flaw.NUL
    return None


def document_problem(
    value: object,
    *,
    max_depth: int,
    max_values: int | None = None,
    allow_nul: bool = True,
) -> Problem | None:
    """The first flaw of `value` (JSON-like: dicts, lists, text, numbers), or None."""
    stack: list[tuple[object, tuple[str | int, ...]]] = [(value, ())]
    seen = 0
    while stack:
        item, path = stack.pop()
        seen += 1
        if max_values is not None and seen > max_values:
            return Problem(Flaw.TOO_MANY, _path(path))
        if isinstance(item, str):
            if flaw := _text_flaw(item, allow_nul):
                return Problem(flaw, _path(path))
        elif isinstance(item, dict | list):
            if len(path) >= max_depth:
                return Problem(Flaw.TOO_DEEP, _path(path))
            if isinstance(item, list):
                stack.extend((child, (*path, i)) for i, child in enumerate(item))
                continue
            for key, child in item.items():
                if not isinstance(key, str):
                    return Problem(Flaw.KEY_NOT_TEXT, _path(path))
                if flaw := _text_flaw(key, allow_nul):
                    return Problem(flaw, _path(path))
                stack.append((child, (*path, key)))
    return None
