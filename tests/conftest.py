"""Shared pytest setup: every test runs in one event loop (session-scoped fixtures share it)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.logging_state import logging_kept


@pytest.fixture
def kept_logging() -> Iterator[None]:
    """For a test that runs the CLI, which configures the process's logging."""
    with logging_kept():
        yield
