"""Logging: one event per line, human-readable by default, JSON for machines.

`BUDCLUSTER_LOG_FORMAT=text` (the default: a person at a terminal) prints
`time LEVEL logger [request principal operation]: message`; `json` prints one JSON object per
line with `ts`, `level`, `logger`, `msg`, and, when known, `request_id` (the caller's
X-Request-ID or one made for the request, sent back in the response), `principal_id` (the
token's id, never the token), `operation` (the GraphQL operation's name), `trace_id` and
`span_id` (when traces are on: the span the line was written in, to find the line's trace), and
`exc` (the traceback). uvicorn's access log is off unless BUDCLUSTER_ACCESS_LOG is set.

Nothing logged may carry a secret: every message passes through `redact`, which masks bearer
tokens, budcluster tokens, PEM blocks and the key material of kubeconfigs, as a second line of
defence behind code that never logs them.
"""

from __future__ import annotations

import contextvars
import json
import logging
import re
import sys
from datetime import UTC, datetime
from typing import Any

from opentelemetry import trace

request_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("request_id", default=None)
principal_id: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "principal_id", default=None
)
operation: contextvars.ContextVar[str | None] = contextvars.ContextVar("operation", default=None)

_SECRETS = (
    (re.compile(r"bud_[0-9a-f]{32}_[A-Za-z0-9_-]+"), "bud_***"),
    (re.compile(r"(?i)(bearer\s+)[^\s\"',]+"), r"\1***"),
    (
        re.compile(r"-----BEGIN [A-Z ]+-----.*?-----END [A-Z ]+-----", re.DOTALL),
        "-----PEM***-----",
    ),
    (
        re.compile(
            r"(?i)((?:client-key-data|client-certificate-data|token|password)\"?\s*[:=]\s*\"?)"
            r"[^\s\"',}]+"
        ),
        r"\1***",
    ),
)


def redact(text: str) -> str:
    for pattern, replacement in _SECRETS:
        text = pattern.sub(replacement, text)
    return text


class _Context(logging.Filter):
    """Stamps each record with the request's context and masks secrets in its text."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id.get()
        record.principal_id = principal_id.get()
        record.operation = operation.get()
        span = trace.get_current_span().get_span_context()
        record.trace_id = format(span.trace_id, "032x") if span.is_valid else None
        record.span_id = format(span.span_id, "016x") if span.is_valid else None
        message = record.getMessage()
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        event: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key in ("request_id", "principal_id", "operation", "trace_id", "span_id"):
            value = getattr(record, key, None)
            if value:
                event[key] = value
        if record.exc_info:
            event["exc"] = redact(self.formatException(record.exc_info))
        return json.dumps(event, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s%(context)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        parts = [getattr(record, key, None) for key in ("request_id", "principal_id", "operation")]
        shown = " ".join(p for p in parts if p)
        record.context = f" [{shown}]" if shown else ""
        text = super().format(record)
        return redact(text) if record.exc_info else text


def configure(level: str, fmt: str = "text") -> None:
    """The root logger (and uvicorn's, which propagate to it) writes to stderr."""
    if fmt not in ("text", "json"):
        raise ValueError("BUDCLUSTER_LOG_FORMAT must be text or json")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    handler.addFilter(_Context())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logger = logging.getLogger(name)
        logger.handlers.clear()
        logger.propagate = True
    # What Python itself would print to stderr goes through the same lines: warnings, and
    # exceptions it cannot raise (a finaliser's, a task's left unawaited).
    logging.captureWarnings(True)
    sys.unraisablehook = _unraisable


def _unraisable(unraisable: Any) -> None:
    logging.getLogger("python").error(
        "%s: %s",
        unraisable.err_msg or "Exception ignored",
        repr(unraisable.object),
        exc_info=(unraisable.exc_type, unraisable.exc_value, unraisable.exc_traceback),
    )
