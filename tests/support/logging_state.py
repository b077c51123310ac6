"""What `budcluster.logs.configure` changes process-wide (the root logger's handlers and level,
the unraisable hook, warnings capture), put back after a test that ran the CLI: left as it was,
it made later tests' logs depend on the order they ran in (a test of the CLI, then the readiness
probe's "logs nothing" test saw every INFO line of the app's migrations)."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def logging_kept() -> Iterator[None]:
    root = logging.getLogger()
    saved = (list(root.handlers), root.level, sys.unraisablehook)
    try:
        yield
    finally:
        for handler in list(root.handlers):
            root.removeHandler(handler)
        for handler in saved[0]:
            root.addHandler(handler)
        root.setLevel(saved[1])
        sys.unraisablehook = saved[2]
        logging.captureWarnings(False)
