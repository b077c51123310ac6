"""The streaming load generator against a fake OpenAI-compatible server (tests/support/fake_llm).

Covers: the SSE parser on every split of a stream (CRLF, comments, `data:` without a space,
multi-line data, an event cut off at the end); measured TTFT, ITL, TPOT and output throughput
within 5 % of the server's schedule; a closed loop never exceeding its users; an open loop
sending at its rate whatever the responses take, and capped when asked; a duration that stops
sending but awaits what is in flight; each fault (stall, drop, 429, 500, non-JSON data, an error
event, no [DONE], no content) becoming a failed sample of the right kind with a fixed reason
(nothing the server said) while the other requests of the run are still measured; the request bodies (vLLM extensions,
usage, prompts in turn, the same for the same seed); usage missing; an unreachable endpoint, and
a missing /models route that does not stop a run; a stop that cancels a long run at once.
"""

from __future__ import annotations

import asyncio
import dataclasses
import socket
import time
from typing import Any

import pytest

from adapters.loadgen.client import EventStream, StreamingLoadGenerator
from domain.model.load import (
    Api,
    EndpointUnreachable,
    FailureKind,
    Lengths,
    LoadPlan,
    LoadRun,
    RequestSample,
)
from domain.serving.metrics import summarize
from tests.support.fake_llm import FakeLLM, Fault


def plan(fake: FakeLLM, **changes: Any) -> LoadPlan:
    base = LoadPlan(
        endpoint=fake.url,
        model="fake",
        prompt_tokens=Lengths.fixed(16),
        output_tokens=Lengths.fixed(8),
        concurrency=2,
        request_count=6,
        request_timeout_seconds=5.0,
    )
    return dataclasses.replace(base, **changes)


async def run(fake: FakeLLM, **changes: Any) -> LoadRun:
    return await StreamingLoadGenerator().run(plan(fake, **changes))


def within(measured: float, expected: float, share: float = 0.05) -> bool:
    return abs(measured - expected) <= share * expected


# --- the parser --------------------------------------------------------------------------------

STREAM = (
    b": keep-alive\r\n"
    b'data: {"a": 1}\r\n\r\n'
    b'data:{"b": 2}\n\n'
    b"event: message\ndata: first\ndata: second\n\n"
    b"data: [DONE]\n\n"
    b"data: cut off"
)
EVENTS = [b'{"a": 1}', b'{"b": 2}', b"first\nsecond", b"[DONE]", b"cut off"]


def parse(*pieces: bytes) -> list[bytes]:
    stream = EventStream()
    events = [data for piece in pieces for data in stream.feed(piece)]
    return events + stream.close()


def test_events_are_parsed_whatever_the_reads_split() -> None:
    assert parse(STREAM) == EVENTS
    for cut in range(len(STREAM) + 1):
        assert parse(STREAM[:cut], STREAM[cut:]) == EVENTS, cut
    assert parse(*(STREAM[i : i + 1] for i in range(len(STREAM)))) == EVENTS


def test_an_event_is_complete_only_at_its_blank_line() -> None:
    stream = EventStream()
    assert stream.feed(b"data: x\n") == []
    assert stream.feed(b"\n") == [b"x"]
    assert stream.close() == []


# --- measurements -----------------------------------------------------------------------------


async def test_measures_the_servers_schedule_and_caps_users() -> None:
    # long enough that a loaded machine's scheduling delays (a few ms) stay well under 5 %
    ttft, itl, tokens, users = 0.5, 0.025, 40, 6
    async with FakeLLM(ttft=ttft, itl=itl) as fake:
        result = await run(
            fake, concurrency=users, request_count=12, output_tokens=Lengths.fixed(tokens)
        )
        assert fake.max_in_flight == users

    measured = summarize(result)
    assert measured.successful_requests == 12
    assert measured.output_tokens == 12 * tokens
    assert measured.ttft is not None and within(measured.ttft.mean, ttft)
    assert measured.itl is not None and within(measured.itl.mean, itl)
    assert measured.itl.count == 12 * (tokens - 1)
    assert measured.tpot is not None and within(measured.tpot.mean, itl)
    assert measured.e2el is not None and within(measured.e2el.mean, ttft + (tokens - 1) * itl)
    each_request = ttft + (tokens - 1) * itl
    assert within(measured.output_throughput, users * tokens / each_request)


async def test_an_open_loop_sends_at_its_rate_whatever_the_responses_take() -> None:
    async with FakeLLM(ttft=0.3) as fake:
        result = await run(
            fake, concurrency=None, request_rate=40.0, request_count=None, duration_seconds=1.0
        )
        assert fake.max_in_flight >= 6  # ~12 in flight at 40/s of 0.3 s; a closed loop has 2

    assert 28 <= len(result.samples) <= 52
    assert all(s.ok for s in result.samples)
    assert max(s.sent_at for s in result.samples) < 1.0


async def test_an_open_loop_with_a_cap_never_exceeds_it() -> None:
    async with FakeLLM(ttft=0.1) as fake:
        result = await run(fake, concurrency=3, request_rate=100.0, request_count=12)
        assert fake.max_in_flight == 3

    assert [s.index for s in result.samples] == list(range(12))
    assert all(s.ok for s in result.samples)


async def test_a_duration_stops_sending_and_awaits_requests_in_flight() -> None:
    async with FakeLLM(ttft=0.3) as fake:
        result = await run(fake, concurrency=2, request_count=None, duration_seconds=0.5)

    # two rounds of two: the second ends at ~0.6 s, past the 0.5 s, and nothing follows
    assert len(result.samples) == 4 and all(s.ok for s in result.samples)
    assert max(s.sent_at for s in result.samples) < 0.5
    assert result.duration_seconds > 0.55 and not result.cancelled


# --- faults -----------------------------------------------------------------------------------

EXPECTED_FAILURES = {
    Fault.STALL: (FailureKind.TIMEOUT, "stalled: no data for 0.5s after 3 tokens"),
    Fault.DROP: (FailureKind.CONNECTION, "connection lost: after 3 tokens ("),
    Fault.TOO_MANY_REQUESTS: (FailureKind.HTTP_STATUS, "HTTP 429: Too Many Requests"),
    Fault.SERVER_ERROR: (FailureKind.HTTP_STATUS, "HTTP 500: Internal Server Error"),
    Fault.NOT_JSON: (FailureKind.MALFORMED, "not JSON: an event's data is not JSON"),
    Fault.ERROR_EVENT: (FailureKind.MALFORMED, "error event: the server sent an error in the"),
    Fault.NO_DONE: (FailureKind.MALFORMED, "no [DONE]: the stream ended after 8 tokens"),
    Fault.EMPTY: (FailureKind.EMPTY, "no tokens: the stream ended without content"),
}


@pytest.mark.parametrize("fault", list(Fault))
async def test_a_fault_fails_its_requests_and_the_others_are_measured(fault: Fault) -> None:
    kind, reason = EXPECTED_FAILURES[fault]
    seen: list[RequestSample] = []
    async with FakeLLM(ttft=0.01, itl=0.005, faults={1: fault, 3: fault}) as fake:
        result = await StreamingLoadGenerator().run(
            plan(fake, request_timeout_seconds=0.5), on_sample=seen.append
        )

    assert sorted(seen, key=lambda s: s.index) == list(result.samples)
    failed = [s for s in result.samples if not s.ok]
    assert [(s.failure, s.error is not None and s.error.startswith(reason)) for s in failed] == [
        (kind, True),
        (kind, True),
    ]
    assert all(s.error is not None and "\n" not in s.error for s in failed)
    said = ("Too many requests", "the engine crashed", "this is not json", "CUDA out of memory")
    assert not [s.error for s in failed if any(text in str(s.error) for text in said)]
    succeeded = [s for s in result.samples if s.ok]
    assert len(succeeded) == 4
    for sample in succeeded:
        assert sample.output_tokens == 8 and len(sample.itl) == 7
        assert sample.ttft is not None and sample.ttft >= 0.01
        assert sample.e2el is not None and sample.e2el > 0.01 + 7 * 0.005 - 0.001
    measured = summarize(result)
    assert measured.successful_requests == 4 and measured.output_tokens == 32
    assert measured.failures[0][1] == 2 and measured.failures[0][0].startswith(kind.value)


async def test_every_request_can_fail_and_the_run_still_ends() -> None:
    async with FakeLLM(fault=Fault.SERVER_ERROR) as fake:
        result = await run(fake)

    measured = summarize(result)
    assert (measured.successful_requests, measured.failed_requests) == (0, 6)
    assert measured.ttft is None and measured.output_throughput == 0.0


# --- what is sent, and how answers are read ---------------------------------------------------


async def test_requests_carry_vllms_extensions_and_are_the_same_for_a_seed() -> None:
    lengths = {"prompt_tokens": Lengths.uniform(5, 50), "output_tokens": Lengths.uniform(2, 9)}
    async with FakeLLM() as fake:
        first = await run(fake, concurrency=1, seed=7, **lengths)
        again = await run(fake, concurrency=1, seed=7, **lengths)
        other = await run(fake, concurrency=1, seed=8, **lengths)
    bodies = fake.bodies

    assert bodies[0:6] == bodies[6:12] != bodies[12:18]
    body = bodies[0]
    assert body["min_tokens"] == body["max_tokens"] and body["ignore_eos"] is True
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["temperature"] == 0 and body["model"] == "fake"
    assert len(body["messages"][0]["content"].split()) == first.samples[0].prompt_tokens
    assert [s.output_tokens for s in first.samples] == [b["max_tokens"] for b in bodies[0:6]]
    assert [s.output_tokens for s in first.samples] == [s.output_tokens for s in again.samples]
    assert len({s.output_tokens for s in first.samples + other.samples}) > 1


async def test_completions_with_dataset_prompts_and_without_vllm_extensions() -> None:
    prompts = ("one two three", "four five")
    async with FakeLLM(itl=0.001) as fake:
        result = await StreamingLoadGenerator(ignore_eos=False).run(
            plan(fake, api=Api.COMPLETIONS, prompts=prompts, request_count=3, concurrency=1)
        )

    assert [b["prompt"] for b in fake.bodies] == [*prompts, prompts[0]]
    assert all("min_tokens" not in b and "ignore_eos" not in b for b in fake.bodies)
    assert [s.prompt_tokens for s in result.samples] == [3, 2, 3]
    assert all(s.ok and s.output_tokens == 8 for s in result.samples)


async def test_without_usage_tokens_are_counted_from_the_stream() -> None:
    async with FakeLLM(itl=0.001, usage=False) as fake:
        result = await run(fake, prompt_tokens=Lengths.fixed(11), output_tokens=Lengths.fixed(5))

    assert all(s.ok for s in result.samples)
    assert {(s.prompt_tokens, s.output_tokens, len(s.itl)) for s in result.samples} == {(11, 5, 4)}


async def test_any_sse_framing_is_read_alike() -> None:
    framing = FakeLLM(
        itl=0.002, line_end="\r\n", data_space=False, comments=True, split_events=True
    )
    async with framing as fake:
        result = await run(fake)

    assert all(s.ok and s.output_tokens == 8 and len(s.itl) == 7 for s in result.samples)


# --- reaching the endpoint, and stopping ------------------------------------------------------


async def test_an_unreachable_endpoint_is_refused_before_the_run() -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    endpoint = f"http://127.0.0.1:{port}/v1"

    with pytest.raises(EndpointUnreachable) as refused:
        await StreamingLoadGenerator().run(LoadPlan(endpoint=endpoint, model="m", request_count=1))
    assert refused.value.endpoint == endpoint and refused.value.reason


async def test_a_missing_models_route_does_not_stop_the_run() -> None:
    async with FakeLLM(models_status=404) as fake:
        result = await run(fake, request_count=2)

    assert len(result.samples) == 2 and all(s.ok for s in result.samples)


async def test_stop_cancels_a_long_run_at_once() -> None:
    stop = asyncio.Event()
    seen: list[RequestSample] = []
    async with FakeLLM(itl=0.01) as fake:
        running = asyncio.create_task(
            StreamingLoadGenerator().run(
                plan(
                    fake,
                    concurrency=4,
                    request_count=None,
                    duration_seconds=60.0,
                    output_tokens=Lengths.fixed(10_000),
                ),
                on_sample=seen.append,
                stop=stop,
            )
        )
        await fake.until_tokens(40)
        stopped_at = time.perf_counter()
        stop.set()
        result = await asyncio.wait_for(running, 5.0)
        took = time.perf_counter() - stopped_at

    assert took < 0.5
    assert result.cancelled
    assert len(result.samples) == 4 == len(seen)
    assert {s.failure for s in result.samples} == {FailureKind.CANCELLED}
    assert sum(s.output_tokens for s in result.samples) > 0
    assert all(s.error is not None and s.error.startswith("cancelled: ") for s in result.samples)
