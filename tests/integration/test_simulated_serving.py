"""The simulated model-serving endpoint over real HTTP, against its own performance model.

Covers: alone on a replica, measured TTFT and time per output token match the model's
predictions (within 5 %); eight streams on one replica decode slower, as the model predicts, and
two replicas split them four and four; an H100 beats a T4; `max_concurrency` makes extra requests
wait for a slot; vLLM's validation errors in OpenAI's error shape (bad JSON, wrong model, too
long, max_tokens 0, unknown key, no replica) and /health; the usage chunk, [DONE], the finish
reason and non-streamed responses; a client going away frees its slot, and closing with
requests waiting for slots is clean; lookups are cached, shared and refreshed. Timings are
compared as means over many tokens, so event-loop jitter stays well inside the tolerances.
"""

from __future__ import annotations

import asyncio
import json
import logging
import statistics
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from typing import Any

import aiohttp
import pytest

from adapters.simulated import serving as serving_module
from adapters.simulated.performance import PerformanceModel, ServingProfile
from adapters.simulated.serving import ServedModel, SimulatedServing

MODELS: dict[str, ServedModel] = {}
PERFORMANCE = PerformanceModel()

# A10G, 8B: 210 ms to the first token of an 800-word prompt, 38 ms per output token.
STEADY = ServedModel("llama-3.1-8b-instruct", "nvidia-a10g", 1, 1, 8, 4096)
# L4, 1.5B, 2000-word prompts: small weights, so the batch's KV reads show (+30 % at batch 8).
BATCHED = ServedModel("qwen2.5-1.5b-instruct", "nvidia-l4", 1, 1, 16, 4096)


def profile(served: ServedModel) -> ServingProfile:
    return PERFORMANCE.profile(
        model=served.model, gpu_type=served.gpu_type, tensor_parallel=served.gpus_per_replica
    )


def words(n: int) -> str:
    return " ".join(["word"] * n)


@dataclass
class Streamed:
    token_times: list[float]
    """Seconds from sending the request to each chunk that carries a token."""
    chunks: list[dict[str, Any]]
    done: bool

    @property
    def ttft(self) -> float:
        return self.token_times[0]

    @property
    def mean_gap(self) -> float:
        return gap(self.token_times)


def gap(times: list[float]) -> float:
    return (times[-1] - times[0]) / (len(times) - 1)


def token_of(chunk: dict[str, Any]) -> str:
    if not chunk["choices"]:
        return ""
    choice = chunk["choices"][0]
    return str(choice["delta"].get("content") or "") if "delta" in choice else str(choice["text"])


async def stream(
    http: aiohttp.ClientSession, url: str, body: dict[str, Any], *, tokens: int | None = None
) -> Streamed:
    """Stream a completion, reading `tokens` tokens (all of them if None) before hanging up."""
    loop = asyncio.get_running_loop()
    sent = loop.time()
    result = Streamed([], [], done=False)
    async with (
        asyncio.timeout(15),  # a broken server fails the test instead of hanging it
        http.post(url, json={**body, "stream": True}) as response,
    ):
        assert response.status == 200, await response.text()
        assert response.headers["Content-Type"].startswith("text/event-stream")
        async for line in response.content:
            if not line.startswith(b"data: "):
                continue
            if line.strip() == b"data: [DONE]":
                result.done = True
                continue
            chunk = json.loads(line[6:])
            result.chunks.append(chunk)
            if token_of(chunk):
                result.token_times.append(loop.time() - sent)
                if len(result.token_times) == tokens:
                    response.close()
                    break
    return result


def chat(served: ServedModel, prompt_words: int, max_tokens: int) -> dict[str, Any]:
    return {
        "model": served.model,
        "messages": [{"role": "user", "content": words(prompt_words)}],
        "max_tokens": max_tokens,
    }


@pytest.fixture(scope="module")
async def serving() -> AsyncIterator[SimulatedServing]:
    async def lookup(key: str) -> ServedModel | None:
        return MODELS.get(key)

    server = SimulatedServing(lookup, cache_seconds=0.0)
    await server.start()
    yield server
    await server.close()


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


def deploy(key: str, served: ServedModel) -> str:
    MODELS[key] = served
    return key


async def test_alone_on_a_replica_ttft_and_tpot_match_the_model(
    serving: SimulatedServing, http: aiohttp.ClientSession
) -> None:
    key = deploy("steady", STEADY)
    prompt, output = 800, 12
    url = f"{serving.endpoint(key)}/chat/completions"
    async with http.get(f"{serving.endpoint(key)}/models") as response:  # connected beforehand
        assert response.status == 200
    runs = [await stream(http, url, chat(STEADY, prompt, output)) for _ in range(3)]
    model = profile(STEADY)
    expected_gap = statistics.mean(
        model.decode_step_seconds(1, prompt + k) for k in range(1, output)
    )
    assert model.ttft_seconds(prompt) > 0.2 and expected_gap > 0.015
    assert all(len(run.token_times) == output for run in runs)
    assert statistics.mean(r.ttft for r in runs) == pytest.approx(
        model.ttft_seconds(prompt), rel=0.05
    )
    assert statistics.mean(r.mean_gap for r in runs) == pytest.approx(expected_gap, rel=0.05)
    assert serving.requests_served(key) == 3


@dataclass
class UnderLoad:
    load: tuple[int, ...]
    """Seen once all streams were routed."""
    gap: float
    """The mean gap between tokens while all streams decode together."""
    predicted_gap: float
    last_ttft: float
    predicted_last_ttft: float
    """The last stream's first token waits for the prefills of those routed before it."""


async def decode_under_load(
    serving: SimulatedServing, http: aiohttp.ClientSession, key: str, streams: int
) -> UnderLoad:
    prompt, output = 2000, 96
    url = f"{serving.endpoint(key)}/chat/completions"
    runs = [
        asyncio.ensure_future(stream(http, url, chat(BATCHED, prompt, output)))
        for _ in range(streams)
    ]
    async with asyncio.timeout(5):
        while sum(serving.load(key)) < streams:
            await asyncio.sleep(0.005)
    load = serving.load(key)
    results = await asyncio.gather(*runs)
    start = max(r.token_times[0] for r in results)  # the last stream's first token
    end = min(r.token_times[-1] for r in results)  # the first stream's last one
    middle = (start + end) / 2
    inside = [[t for t in r.token_times if start <= t <= end] for r in results]
    assert all(len(times) >= 20 for times in inside), "all streams decode together for a while"
    context = sum(prompt + sum(1 for t in r.token_times if t <= middle) for r in results)
    batch, model = max(load), profile(BATCHED)
    return UnderLoad(
        load,
        statistics.mean(gap(times) for times in inside),
        model.decode_step_seconds(batch, context * batch // streams),
        start,
        batch * model.prefill_seconds(prompt) + model.overhead_seconds,
    )


async def test_a_loaded_replica_decodes_slower_and_two_replicas_halve_the_load(
    serving: SimulatedServing, http: aiohttp.ClientSession
) -> None:
    alone = profile(BATCHED).time_per_output_token(1, 2000)
    one = await decode_under_load(serving, http, deploy("batched-1", BATCHED), 8)
    assert one.load == (8,)
    assert one.gap == pytest.approx(one.predicted_gap, rel=0.05)
    assert one.gap > 1.2 * alone
    # The last first token waits for 8 prefills (not 1: a replica without its prefill lane would
    # answer in an eighth of this). Measured from each client's send, on the wall clock: a
    # loaded machine delivers the eight requests late and unevenly (6 % over at a load of 9 on
    # 2 cores, in a full run beside other work), so the bound is 15 %, still far from one prefill.
    assert one.last_ttft == pytest.approx(one.predicted_last_ttft, rel=0.15)

    two_replicas = replace(BATCHED, replicas=2)
    two = await decode_under_load(serving, http, deploy("batched-2", two_replicas), 8)
    assert two.load == (4, 4)
    assert two.gap == pytest.approx(two.predicted_gap, rel=0.05)
    assert alone < two.gap < one.gap * 0.93
    assert two.last_ttft == pytest.approx(two.predicted_last_ttft, rel=0.15)
    assert two.last_ttft < one.last_ttft * 0.6
    assert serving.load("batched-1") == (0,) and serving.load("batched-2") == (0, 0)


async def test_an_h100_serves_faster_than_a_t4(
    serving: SimulatedServing, http: aiohttp.ClientSession
) -> None:
    runs: dict[str, Streamed] = {}
    for gpu in ("nvidia-h100-80gb", "nvidia-tesla-t4"):
        served = ServedModel("llama-3.1-8b-instruct", gpu, 1, 1, 8, 4096)
        key = deploy(f"on-{gpu}", served)
        url = f"{serving.endpoint(key)}/chat/completions"
        runs[gpu] = await stream(http, url, chat(served, 200, 6))
    h100, t4 = runs["nvidia-h100-80gb"], runs["nvidia-tesla-t4"]
    assert h100.ttft < t4.ttft / 2
    assert h100.mean_gap < t4.mean_gap / 4


async def test_max_concurrency_makes_extra_requests_wait_for_a_slot(
    serving: SimulatedServing, http: aiohttp.ClientSession
) -> None:
    served = ServedModel("llama-3.1-8b-instruct", "nvidia-a10g", 1, 1, 2, 4096)
    key = deploy("two-slots", served)
    url = f"{serving.endpoint(key)}/chat/completions"
    runs = [asyncio.ensure_future(stream(http, url, chat(served, 10, 6))) for _ in range(4)]
    async with asyncio.timeout(5):
        while sum(serving.load(key)) < 4:
            await asyncio.sleep(0.005)
    async with http.get(f"{serving.base_url}/d/{key}/metrics") as response:
        metrics = await response.text()
    assert 'vllm:num_requests_running{model_name="llama-3.1-8b-instruct"} 2' in metrics
    assert 'vllm:num_requests_waiting{model_name="llama-3.1-8b-instruct"} 2' in metrics
    results = sorted(await asyncio.gather(*runs), key=lambda r: r.ttft)
    first_free = min(r.token_times[-1] for r in results[:2])
    assert all(r.ttft > first_free for r in results[2:])
    assert results[2].ttft > results[1].ttft + 0.1  # five decode steps of 38 ms at least


async def error_of(response: aiohttp.ClientResponse, status: int) -> str:
    assert response.status == status, await response.text()
    body = await response.json()
    error = body["error"]
    assert set(error) >= {"message", "type", "code"} and error["code"] == status
    assert isinstance(error["type"], str) and error["type"]
    return str(error["message"])


async def test_validation_errors_are_openai_shaped(
    serving: SimulatedServing, http: aiohttp.ClientSession
) -> None:
    served = ServedModel("llama-3.1-8b-instruct", "nvidia-a10g", 1, 1, 8, 100)
    key = deploy("strict", served)
    chat_url = f"{serving.endpoint(key)}/chat/completions"
    completions_url = f"{serving.endpoint(key)}/completions"

    async with http.post(
        chat_url, data=b"{not json", headers={"Content-Type": "application/json"}
    ) as r:
        assert "JSON" in await error_of(r, 400)
    async with http.post(chat_url, json={**chat(served, 5, 5), "model": "gpt-4"}) as r:
        assert await error_of(r, 404) == "The model `gpt-4` does not exist."
    async with http.post(chat_url, json=chat(served, 90, 20)) as r:
        message = await error_of(r, 400)
        assert "maximum context length is 100 tokens" in message and "110 tokens" in message
    async with http.post(
        completions_url, json={"model": served.model, "prompt": "hi", "max_tokens": 0}
    ) as r:
        assert "max_tokens must be at least 1" in await error_of(r, 400)
    async with http.post(completions_url, json={"model": served.model, "prompt": {"x": 1}}) as r:
        await error_of(r, 400)
    async with http.post(chat_url, json={"model": served.model, "messages": []}) as r:
        await error_of(r, 400)
    async with http.post(
        chat_url, json={**chat(served, 5, 5), "stream_options": {"include_usage": True}}
    ) as r:
        assert "stream=True" in await error_of(r, 400)
    async with http.post(
        f"{serving.base_url}/d/nowhere/v1/chat/completions", json=chat(served, 5, 5)
    ) as r:
        await error_of(r, 404)
    async with http.get(f"{serving.base_url}/d/nowhere/v1/models") as r:
        await error_of(r, 404)

    async with http.get(f"{serving.base_url}/d/{key}/health") as r:
        assert r.status == 200
    async with http.get(f"{serving.endpoint(key)}/models") as r:
        listed = await r.json()
    assert [m["id"] for m in listed["data"]] == [served.model] and listed["object"] == "list"

    idle = deploy("idle", replace(served, replicas=0))
    async with http.get(f"{serving.base_url}/d/{idle}/health") as r:
        assert r.status == 503
    async with http.post(
        f"{serving.endpoint(idle)}/chat/completions", json=chat(served, 5, 5)
    ) as r:
        await error_of(r, 503)
    assert serving.requests_served(key) == 0


async def test_stream_endings_and_non_streamed_responses(
    serving: SimulatedServing, http: aiohttp.ClientSession
) -> None:
    served = ServedModel("qwen2.5-0.5b", "nvidia-h100-80gb", 1, 1, 8, 1024)
    key = deploy("shapes", served)
    body = {"model": served.model, "prompt": words(7), "max_tokens": 5}
    body_with_usage = {**body, "stream_options": {"include_usage": True}}
    run = await stream(http, f"{serving.endpoint(key)}/completions", body_with_usage)
    assert run.done and len(run.token_times) == 5
    *tokens, usage = run.chunks
    assert [c["object"] for c in run.chunks] == ["text_completion"] * 6
    assert [c["choices"][0]["finish_reason"] for c in tokens] == [None] * 4 + ["length"]
    assert usage["choices"] == []
    assert usage["usage"] == {"prompt_tokens": 7, "completion_tokens": 5, "total_tokens": 12}
    assert len({c["id"] for c in run.chunks}) == 1

    chat_run = await stream(http, f"{serving.endpoint(key)}/chat/completions", chat(served, 3, 4))
    assert chat_run.done and chat_run.chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert all(c["object"] == "chat.completion.chunk" and c["choices"] for c in chat_run.chunks)
    text = "".join(token_of(c) for c in chat_run.chunks)
    assert len(text.split()) == 4

    loop = asyncio.get_running_loop()
    sent = loop.time()
    async with http.post(f"{serving.endpoint(key)}/completions", json=body) as r:
        assert r.status == 200
        completion = await r.json()
    elapsed = loop.time() - sent
    assert elapsed >= profile(served).request_seconds(7, 5) * 0.95
    assert completion["object"] == "text_completion"
    assert len(completion["choices"][0]["text"].split()) == 5
    assert completion["choices"][0]["finish_reason"] == "length"
    assert completion["usage"]["completion_tokens"] == 5

    async with http.post(f"{serving.endpoint(key)}/chat/completions", json=chat(served, 3, 4)) as r:
        answer = await r.json()
    assert answer["object"] == "chat.completion"
    assert answer["choices"][0]["message"]["role"] == "assistant"
    assert answer["usage"] == {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}
    assert serving.requests_served(key) == 4


async def test_a_client_going_away_frees_its_slot(
    serving: SimulatedServing, http: aiohttp.ClientSession
) -> None:
    served = ServedModel("llama-3.1-8b-instruct", "nvidia-a10g", 1, 1, 1, 4096)
    key = deploy("one-slot", served)
    url = f"{serving.endpoint(key)}/chat/completions"
    left = await stream(http, url, chat(served, 10, 500), tokens=3)
    assert len(left.token_times) == 3 and not left.done
    async with asyncio.timeout(2):
        while serving.load(key) != (0,):
            await asyncio.sleep(0.01)

    waiting = asyncio.ensure_future(stream(http, url, chat(served, 10, 500), tokens=1))
    async with asyncio.timeout(2):
        while serving.load(key) != (1,):
            await asyncio.sleep(0.005)
    waiting.cancel()  # gone while prefilling: the slot is free again at once
    async with asyncio.timeout(2):
        while serving.load(key) != (0,):
            await asyncio.sleep(0.01)

    unstreamed = asyncio.ensure_future(http.post(url, json=chat(served, 10, 500)))
    async with asyncio.timeout(2):
        while serving.load(key) != (1,):
            await asyncio.sleep(0.005)
    unstreamed.cancel()  # not streamed: the server is sleeping through it when the client leaves
    async with asyncio.timeout(2):
        while serving.load(key) != (0,):
            await asyncio.sleep(0.01)

    after = await stream(http, url, chat(served, 10, 2))  # no wait for a slot: 500 tokens take 19 s
    assert after.ttft < 3 * profile(served).ttft_seconds(10)
    assert serving.requests_served(key) == 1


async def test_lookups_are_cached_shared_and_refreshed() -> None:
    calls: list[str] = []
    served = {"known": STEADY}

    async def lookup(key: str) -> ServedModel | None:
        calls.append(key)
        await asyncio.sleep(0.01)
        return served.get(key)

    server = SimulatedServing(lookup, cache_seconds=0.3)
    await server.start()
    try:
        async with aiohttp.ClientSession() as http:

            async def status(key: str) -> int:
                async with http.get(f"{server.base_url}/d/{key}/health") as r:
                    return r.status

            assert await asyncio.gather(*(status("known") for _ in range(5))) == [200] * 5
            assert await asyncio.gather(*(status("unknown") for _ in range(3))) == [404] * 3
            served["known"] = replace(STEADY, replicas=2)
            assert await status("known") == 200
            assert sorted(calls) == ["known", "unknown"] and server.load("known") == (0,)
            await asyncio.sleep(0.35)
            assert await status("known") == 200
            assert calls.count("known") == 2 and server.load("known") == (0, 0)
    finally:
        await server.close()


async def test_closing_with_requests_waiting_for_slots_is_clean(
    caplog: pytest.LogCaptureFixture,
) -> None:
    served = ServedModel("llama-3.1-8b-instruct", "nvidia-tesla-t4", 1, 1, 1, 4096)

    async def lookup(key: str) -> ServedModel | None:
        return served

    server = SimulatedServing(lookup)
    await server.start()
    async with aiohttp.ClientSession() as http:
        url = f"{server.endpoint('busy')}/chat/completions"
        runs = [asyncio.ensure_future(stream(http, url, chat(served, 5, 300))) for _ in range(3)]
        async with asyncio.timeout(2):
            while server.load("busy") != (3,):  # one decoding, two waiting for its slot
                await asyncio.sleep(0.005)
        async with asyncio.timeout(2):
            await server.close()
        ended = await asyncio.gather(*runs, return_exceptions=True)
    assert all(isinstance(e, aiohttp.ClientPayloadError) for e in ended)
    assert server.load("busy") == (0,)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


async def test_a_burst_at_zero_shares_one_wake_and_past_the_cap_is_refused_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(serving_module, "MAX_HELD", 3)
    served = {"k": replace(STEADY, replicas=0, wakes=True)}
    woken: list[str] = []
    gate = asyncio.Event()

    async def lookup(key: str) -> ServedModel | None:
        return served.get(key)

    async def wake(key: str) -> bool:
        woken.append(key)
        await gate.wait()  # a replica takes its time to start
        served[key] = replace(served[key], replicas=1)
        return True

    server = SimulatedServing(lookup, cache_seconds=0.05, wake=wake, hold_seconds=10)
    await server.start()
    try:
        async with aiohttp.ClientSession() as http:
            url = f"{server.endpoint('k')}/chat/completions"

            async def ask() -> tuple[int, dict[str, str]]:
                async with http.post(url, json=chat(STEADY, 5, 2)) as r:
                    await r.read()
                    return r.status, dict(r.headers)

            held = [asyncio.ensure_future(ask()) for _ in range(3)]
            async with asyncio.timeout(5):
                while server.serving_load("k").held != 3:
                    await asyncio.sleep(0.005)
            async with asyncio.timeout(5):  # the fourth: refused at once, not held
                status, headers = await ask()
            assert (status, headers["Retry-After"]) == (503, "5")
            gate.set()
            server.changed("k")
            async with asyncio.timeout(5):
                answers = await asyncio.gather(*held)
        assert [s for s, _ in answers] == [200, 200, 200]
        assert all(serving_module.HELD_HEADER in h for _, h in answers)
        assert woken == ["k"]  # one wake for the three held together
    finally:
        await server.close()
