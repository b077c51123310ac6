"""Log lines: human-readable by default, one JSON object per line on request, with the
request's context, and never a secret.

Covers: a JSON line carries ts, level, logger, msg and the request id, principal and operation
set for the request (and not once they are reset); a traceback goes in `exc`; the text format
shows the same context in brackets; budcluster tokens, bearer values, PEM blocks and kubeconfig
key data are masked in messages, in their arguments and in tracebacks; an unknown format is
refused.
"""

from __future__ import annotations

import gc
import io
import json
import logging
from collections.abc import Iterator

import pytest
from opentelemetry import trace

from budcluster import logs
from tests.support.logging_state import logging_kept
from tests.support.tracing import capture

TOKEN = "bud_" + "0123456789abcdef" * 2 + "_" + "S3cretS3cretS3cretS3cret"
PEM = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----"


@pytest.fixture
def captured() -> Iterator[tuple[io.StringIO, logging.Logger]]:
    out = io.StringIO()
    with logging_kept():
        yield out, logging.getLogger("budcluster.test")


def _to(out: io.StringIO, fmt: str) -> None:
    logs.configure("INFO", fmt)
    handler = logging.getLogger().handlers[0]
    assert isinstance(handler, logging.StreamHandler)
    handler.setStream(out)


def test_json_lines_carry_the_requests_context(
    captured: tuple[io.StringIO, logging.Logger],
) -> None:
    out, log = captured
    _to(out, "json")
    tokens = (
        logs.request_id.set("req-1"),
        logs.principal_id.set("token:42"),
        logs.operation.set("SubmitJob"),
    )
    log.info("submitted %s", "train-1")
    for var, token in zip(
        (logs.request_id, logs.principal_id, logs.operation), tokens, strict=True
    ):
        var.reset(token)
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        log.exception("failed")
    first, second = (json.loads(line) for line in out.getvalue().splitlines())
    assert first["msg"] == "submitted train-1" and first["level"] == "INFO"
    assert first["logger"] == "budcluster.test" and first["ts"].endswith("+00:00")
    assert (first["request_id"], first["principal_id"], first["operation"]) == (
        "req-1",
        "token:42",
        "SubmitJob",
    )
    assert "request_id" not in second and "RuntimeError: boom" in second["exc"]


def test_json_lines_written_in_a_span_carry_its_trace(
    captured: tuple[io.StringIO, logging.Logger],
) -> None:
    out, log = captured
    _to(out, "json")
    spans = capture()
    spans.start()
    try:
        with trace.get_tracer("test").start_as_current_span("work") as span:
            log.info("inside")
        log.info("outside")
    finally:
        spans.stop()
    inside, outside = (json.loads(line) for line in out.getvalue().splitlines())
    context = span.get_span_context()
    assert inside["trace_id"] == format(context.trace_id, "032x")
    assert inside["span_id"] == format(context.span_id, "016x")
    assert "trace_id" not in outside and "span_id" not in outside


def test_text_lines_show_the_context_in_brackets(
    captured: tuple[io.StringIO, logging.Logger],
) -> None:
    out, log = captured
    _to(out, "text")
    token = logs.request_id.set("req-2")
    log.warning("slow")
    logs.request_id.reset(token)
    log.warning("plain")
    first, second = out.getvalue().splitlines()
    assert " WARNING budcluster.test [req-2]: slow" in first
    assert second.endswith(" WARNING budcluster.test: plain")


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_secrets_never_reach_a_line(captured: tuple[io.StringIO, logging.Logger], fmt: str) -> None:
    out, log = captured
    _to(out, fmt)
    log.info("header was Bearer %s", TOKEN)
    log.info("token %s refused", TOKEN)
    log.info("kubeconfig: client-key-data: LS0tLS1CRUdJTiBSU0Eg and %s", PEM)
    try:
        raise ValueError(f"cannot parse {PEM} for {TOKEN}")
    except ValueError:
        log.exception("failed")
    text = out.getvalue()
    for secret in (
        TOKEN,
        "S3cretS3cret",
        "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC",
        "LS0tLS1CRUdJTiBSU0Eg",
    ):
        assert secret not in text, (secret, text)
    assert "bud_***" in text and "***" in text


def test_an_unknown_format_is_refused() -> None:
    with pytest.raises(ValueError, match="text or json"):
        logs.configure("INFO", "xml")


def test_what_python_prints_itself_comes_as_log_lines(
    captured: tuple[io.StringIO, logging.Logger],
) -> None:
    out, _ = captured
    _to(out, "json")
    import warnings

    warnings.warn("an old API", DeprecationWarning, stacklevel=1)

    class Leaky:
        def __del__(self) -> None:
            raise OSError("closing failed")

    leaky: Leaky | None = Leaky()
    del leaky  # Python cannot raise from __del__: it hands the error to sys.unraisablehook
    gc.collect()
    warned, ignored = (json.loads(line) for line in out.getvalue().splitlines())
    assert warned["logger"] == "py.warnings" and "an old API" in warned["msg"]
    assert ignored["logger"] == "python" and "OSError: closing failed" in ignored["exc"]
