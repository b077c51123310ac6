"""Files shipped in the package as package data (pyproject.toml), read from disk once."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path


def read_once(path: Path) -> Callable[[], str]:
    """A function answering the file's text (UTF-8), read at its first call and then cached."""

    @functools.cache
    def text() -> str:
        return path.read_text(encoding="utf-8")

    return text
