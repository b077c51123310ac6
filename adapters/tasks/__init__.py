"""Background tasks: arq on Redis in production, an in-process runner for the embedded default.

Both run the same task functions (`workers.tasks`) with the same contract: one run per key at a
time (a second enqueue of a queued or running key is refused), a per-task timeout, and retries only
when the function asks with `RetryTask`, up to `max_tries`.

And the same tracing: queueing a task is a PRODUCER span whose context (W3C `traceparent`) travels
in the payload under `trace_context` when the span is recorded, and each run is a CONSUMER span
continuing it, so one trace follows a mutation from its commit to the work the commit set off, in
whichever process runs it. With tracing off nothing is added to the payload.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

from opentelemetry import propagate, trace
from opentelemetry.context import Context
from opentelemetry.trace import SpanKind, Status, StatusCode

from domain.ports.tasks import RetryTask

TaskFunction = Callable[..., Awaitable[Any]]
TRACE_CONTEXT = "trace_context"
"""The payload's key for the trace context of the span that queued the task."""

_tracer = trace.get_tracer("budcluster.tasks")


@dataclass(frozen=True)
class TaskSpec:
    name: str
    function: TaskFunction
    timeout_seconds: float = 300.0
    max_tries: int = 8


def _attributes(system: str, queue: str, task: str, key: str, operation: str) -> dict[str, str]:
    return {
        "messaging.system": system,
        "messaging.destination.name": queue,
        "messaging.operation.type": operation,
        "messaging.message.id": key,
        "budcluster.task": task,
    }


@contextlib.contextmanager
def sending(
    system: str, queue: str, task: str, key: str, kwargs: dict[str, Any]
) -> Iterator[dict[str, Any]]:
    """The span of queueing a task, and the payload to queue (with the trace context)."""
    with _tracer.start_as_current_span(
        f"send {task}",
        kind=SpanKind.PRODUCER,
        attributes=_attributes(system, queue, task, key, "send"),
    ) as span:
        carrier: dict[str, str] = {}
        if span.is_recording():
            propagate.inject(carrier)
        yield {**kwargs, TRACE_CONTEXT: carrier} if carrier else kwargs


def received(kwargs: dict[str, Any]) -> tuple[Context | None, dict[str, Any]]:
    """The trace context a payload carries (None: it carries none), and the task's own
    arguments."""
    if TRACE_CONTEXT not in kwargs:
        return None, kwargs
    rest = dict(kwargs)
    carrier = rest.pop(TRACE_CONTEXT)
    if not isinstance(carrier, dict):
        return None, rest
    return propagate.extract({str(k): str(v) for k, v in carrier.items()}), rest


@contextlib.contextmanager
def processing(
    system: str, queue: str, task: str, key: str, parent: Context | None, try_number: int
) -> Iterator[None]:
    """The span of one run of a task, a child of the span that queued it. A run that asks to be
    retried is not an error; one that raised is."""
    attributes: dict[str, str | int] = {
        **_attributes(system, queue, task, key, "process"),
        "budcluster.task.try": try_number,
    }
    with _tracer.start_as_current_span(
        f"process {task}",
        context=parent,
        kind=SpanKind.CONSUMER,
        attributes=attributes,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        try:
            yield
        except RetryTask as retry:
            span.set_attribute("budcluster.task.retry_in_seconds", retry.defer_seconds)
            raise
        except Exception as exc:
            span.record_exception(exc)
            span.set_status(Status(StatusCode.ERROR, type(exc).__name__))
            raise
