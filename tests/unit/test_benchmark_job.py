"""A benchmark on a real cluster as a Job running `vllm bench serve`, and its result read back.

Covers: the Job (CPU only, no Kubernetes retry, suspended only when Kueue admits it, Kueue's
labels off the pod, secrets as environment); the plan's flags (chat and completions, open and
closed loop, request counts from a duration, lengths as vLLM's one range ratio, what is refused
naming the plan's field), each flag one that vLLM's CLI defines; the log read back into samples
whose figures (`summarize`) agree with vLLM's own summary in the same result; the container's
driver run against a stand-in `vllm`, its line split as a container runtime splits long lines;
the failures vLLM's client records, named by status or class (never the server's words); malformed
and missing results.
"""

from __future__ import annotations

import copy
import json
import math
import os
import stat
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.kubernetes.benchmark_job import (
    DRIVER,
    RESULT_BEGIN,
    RESULT_END,
    bench_serve_args,
    benchmark_job,
    run_from_result,
    samples_from_log,
)
from domain.model.load import Api, FailureKind, LengthKind, Lengths, LoadPlan, LoadResult
from domain.serving.metrics import summarize

ENDPOINT = "http://llama-3-8b.tenant-a.svc.cluster.local:8000/v1"
PLAN = LoadPlan(
    endpoint=ENDPOINT,
    model="llama-3-8b",
    concurrency=4,
    request_count=8,
    prompt_tokens=Lengths.fixed(512),
    output_tokens=Lengths.fixed(16),
    seed=7,
)
LABELS = {
    "app.kubernetes.io/managed-by": "budcluster",
    "bud.ai/job-id": "job-1",
    "kueue.x-k8s.io/queue-name": "default",
    "kueue.x-k8s.io/priority-class": "bud-normal",
}
IMAGE = "vllm/vllm-openai:v0.12.0"

VLLM_FLAGS = {
    # vllm/benchmarks/serve.py (add_cli_args) and datasets/arg_utils.py (add_dataset_parser)
    "--backend": "value",
    "--base-url": "value",
    "--endpoint": "value",
    "--model": "value",
    "--tokenizer": "value",
    "--dataset-name": "value",
    "--random-input-len": "value",
    "--random-output-len": "value",
    "--random-range-ratio": "value",
    "--num-prompts": "value",
    "--request-rate": "value",
    "--max-concurrency": "value",
    "--seed": "value",
    "--percentile-metrics": "value",
    "--metric-percentiles": "value",
    "--result-dir": "value",
    "--result-filename": "value",
    "--ignore-eos": "switch",
    "--disable-tqdm": "switch",
    "--save-result": "switch",
    "--save-detailed": "switch",
}

TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "/usr/local/lib/python3.12/dist-packages/vllm/benchmarks/lib/endpoint_request_func.py",'
    " line 418, in async_request_openai_chat_completions\n"
    "    async for chunk_bytes in response.content.iter_any():\n"
    '  File "/usr/local/lib/python3.12/dist-packages/aiohttp/streams.py", line 50, in __anext__\n'
    "    rv = await self.read_func()\n"
    "aiohttp.client_exceptions.ClientPayloadError: Response payload is not completed: "
    "<TransferEncodingError: 400, message='Not enough data for satisfy transfer length header.'>\n"
)

# What `vllm bench serve --backend openai-chat --max-concurrency 4 --num-prompts 8 --save-result
# --save-detailed --percentile-metrics ttft,tpot,itl,e2el --metric-percentiles 50,90,99` saves
# (vllm/benchmarks/serve.py: benchmark() and main_async()): six requests succeeded (one with a
# single output token, one whose chunks bundled tokens), one got HTTP 429, one lost its stream
# after two chunks. The summary fields were computed as vLLM's calculate_metrics() does, with
# numpy: latency = the last token chunk's time, TPOT over outputs of more than one token, ITLs
# pooled, np.percentile's linear interpolation.
# fmt: off
VLLM_RESULT: dict[str, Any] = {
    "date": "20260912-101500", "endpoint_type": "openai-chat", "backend": "openai-chat",
    "label": None, "model_id": "llama-3-8b", "tokenizer_id": "meta-llama/Meta-Llama-3-8B-Instruct",
    "num_prompts": 8, "request_rate": "inf", "burstiness": 1.0, "max_concurrency": 4,
    "duration": 0.710199999992759, "completed": 6, "failed": 2,
    "total_input_tokens": 3114, "total_output_tokens": 75,
    "request_throughput": 8.448324415743699, "request_goodput": None,
    "output_throughput": 105.60405519679622, "total_token_throughput": 4490.284426967776,
    "input_lens": [519, 519, 519, 519, 519, 512, 519, 512],
    "output_lens": [16, 12, 16, 1, 14, 0, 16, 0],
    "ttfts": [0.1824, 0.1911, 0.2033, 0.1957, 0.0931, 0.0, 0.1012, 0.2105],
    "itls": [
        [0.0213, 0.0221, 0.0219, 0.0224, 0.0218, 0.023, 0.0216, 0.0222, 0.0219, 0.0227, 0.0221,
         0.0218, 0.0235, 0.022, 0.0219],
        [0.0225, 0.0219, 0.023, 0.0221, 0.0218, 0.0226, 0.0224, 0.0219, 0.0241, 0.022, 0.0223],
        [0.0222, 0.044, 0.0218, 0.0225, 0.0219, 0.0451, 0.0221, 0.0224, 0.022, 0.0218, 0.0446,
         0.0223, 0.0219],
        [],
        [0.0209, 0.0212, 0.0208, 0.0215, 0.0211, 0.021, 0.0213, 0.0209, 0.0216, 0.0211, 0.021,
         0.0212, 0.0214],
        [],
        [0.0207, 0.0211, 0.0209, 0.0213, 0.0208, 0.021, 0.0212, 0.0209, 0.0211, 0.0208, 0.0214,
         0.021, 0.0209, 0.0212, 0.0211],
        [0.0208, 0.0215],
    ],
    "latencies": [0.5146000000000001, 0.4377, 0.5579, 0.1957, 0.3681, 0.0, 0.41659999999999997,
                  0.0],
    "start_times": [81234.5004, 81234.5006, 81234.5007, 81234.5009, 81234.6968, 81234.792,
                    81234.7925, 81234.8952],
    "queue_times": [0.0, 0.0, 0.0, 0.0, 0.1959, 0.2911, 0.2916, 0.3943],
    "generated_texts": [*["The capital of France is Paris, which is"] * 5, "", "The capital of", ""],
    "errors": ["", "", "", "", "", "Too Many Requests", "", TRACEBACK],
    "max_output_tokens_per_s": 75.0, "max_concurrent_requests": 4, "rtfx": 0.0,
    "mean_ttft_ms": 161.13333333333333, "median_ttft_ms": 186.75, "std_ttft_ms": 45.72324961718662,
    "p50_ttft_ms": 186.75, "p90_ttft_ms": 199.5, "p99_ttft_ms": 202.92000000000002,
    "mean_tpot_ms": 22.077072261072257, "median_tpot_ms": 22.14666666666667,
    "std_tpot_ms": 0.9507513435355984, "p50_tpot_ms": 22.14666666666667,
    "p90_tpot_ms": 23.151272727272723, "p99_tpot_ms": 23.591127272727267,
    "mean_itl_ms": 22.74328358208955, "median_itl_ms": 21.8, "std_itl_ms": 4.775316630295964,
    "p50_itl_ms": 21.8, "p90_itl_ms": 22.82, "p99_itl_ms": 44.77,
    "mean_e2el_ms": 415.09999999999997, "median_e2el_ms": 427.15, "std_e2el_ms": 116.29736311140792,
    "p50_e2el_ms": 427.15, "p90_e2el_ms": 536.25, "p99_e2el_ms": 555.735,
}
# fmt: on


def flags(args: list[str]) -> dict[str, str | bool]:
    """The args as vLLM's argparse reads them: a value after each value flag."""
    parsed: dict[str, str | bool] = {}
    words = iter(args)
    for word in words:
        assert word in VLLM_FLAGS, f"{word} is not a flag of vllm bench serve"
        assert word not in parsed, f"{word} twice"
        parsed[word] = next(words) if VLLM_FLAGS[word] == "value" else True
    return parsed


def flags_of(**fields: Any) -> dict[str, str | bool]:
    """The flags of a plan to ENDPOINT (one request unless said)."""
    return flags(bench_serve_args(LoadPlan(ENDPOINT, "m", **{"request_count": 1, **fields})))


def drawn(parsed: dict[str, str | bool], side: str = "output") -> tuple[int, int]:
    """The lengths vLLM draws from for the flags (datasets/random.py: get_sampling_params, the
    output side; the prompt side first takes off the tokenizer's special tokens)."""
    length, ratio = (
        int(str(parsed[f"--random-{side}-len"])),
        float(str(parsed["--random-range-ratio"])),
    )
    return max(math.floor(length * (1 - ratio)), 1), max(math.ceil(length * (1 + ratio)), 1)


def log_of(result: dict[str, Any]) -> str:
    return "\n".join(
        [
            "INFO 09-12 10:15:00 [__init__.py:216] Automatically detected platform cuda.",
            "============ Serving Benchmark Result ============",
            RESULT_BEGIN,
            json.dumps(result),
            RESULT_END,
            "",
        ]
    )


def assert_agrees_with_vllm(ours: LoadResult, vllm: dict[str, Any], *, abs_ms: float) -> None:
    """Every summary field vLLM saved, as our figures give it (vLLM reports milliseconds)."""
    counts = (ours.successful_requests, ours.failed_requests, ours.input_tokens, ours.output_tokens)
    assert counts == (
        vllm["completed"],
        vllm["failed"],
        vllm["total_input_tokens"],
        vllm["total_output_tokens"],
    )
    assert ours.duration_seconds == pytest.approx(vllm["duration"], rel=1e-5)
    for name in ("request_throughput", "output_throughput", "total_token_throughput"):
        assert getattr(ours, name) == pytest.approx(vllm[name], rel=1e-5), name
    for metric in ("ttft", "tpot", "itl", "e2el"):
        summary = getattr(ours, metric)
        assert summary is not None
        for ours_value, field in (
            (summary.mean, f"mean_{metric}_ms"),
            (summary.p50, f"median_{metric}_ms"),
            (summary.p50, f"p50_{metric}_ms"),
            (summary.p90, f"p90_{metric}_ms"),
            (summary.p99, f"p99_{metric}_ms"),
        ):
            assert ours_value * 1000 == pytest.approx(vllm[field], abs=abs_ms), field


# --- the Job -------------------------------------------------------------------------------------


def test_the_job_runs_vllm_bench_serve_on_a_cpu_only_pod_that_kueue_admits() -> None:
    job = benchmark_job(name="bench-1", namespace="tenant-a", plan=PLAN, image=IMAGE, labels=LABELS)
    assert (job["apiVersion"], job["kind"]) == ("batch/v1", "Job")
    assert job["metadata"] == {"name": "bench-1", "namespace": "tenant-a", "labels": LABELS}
    spec = job["spec"]
    assert spec["suspend"] is True  # Kueue resumes it on admission
    assert (spec["backoffLimit"], spec["ttlSecondsAfterFinished"]) == (0, 3600)
    pod = spec["template"]
    assert pod["metadata"]["labels"] == {
        "app.kubernetes.io/managed-by": "budcluster",
        "bud.ai/job-id": "job-1",
    }
    assert pod["spec"]["restartPolicy"] == "Never"
    (main,) = pod["spec"]["containers"]
    assert main["image"] == IMAGE
    assert main["command"] == ["python3", "-c", DRIVER]
    assert main["args"] == bench_serve_args(PLAN)
    assert main["resources"] == {"requests": {"cpu": "1", "memory": "4Gi"}}  # no GPU
    assert main["volumeMounts"] == [{"name": "results", "mountPath": "/results"}]
    assert pod["spec"]["volumes"] == [{"name": "results", "emptyDir": {}}]
    assert main["env"] == [{"name": "PYTHONUNBUFFERED", "value": "1"}]


def test_outside_kueue_the_job_starts_at_once() -> None:
    labels = {"bud.ai/job-id": "job-1"}
    job = benchmark_job(name="b", namespace="n", plan=PLAN, image=IMAGE, labels=labels)
    assert job["spec"]["suspend"] is False


def test_secrets_reach_the_container_as_environment_and_the_tokenizer_as_a_flag() -> None:
    job = benchmark_job(
        name="b",
        namespace="n",
        plan=PLAN,
        image=IMAGE,
        labels={},
        api_key_secret="llama-key",
        tokenizer="meta-llama/Meta-Llama-3-8B-Instruct",
        hf_token_secret="hf",
    )
    (main,) = job["spec"]["template"]["spec"]["containers"]
    assert main["env"][1:] == [
        {
            "name": "OPENAI_API_KEY",
            "valueFrom": {"secretKeyRef": {"name": "llama-key", "key": "api-key"}},
        },
        {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}},
    ]
    assert flags(main["args"])["--tokenizer"] == "meta-llama/Meta-Llama-3-8B-Instruct"
    assert flags(main["args"])["--model"] == "llama-3-8b"


# --- the plan as vLLM's flags --------------------------------------------------------------------


def test_a_closed_loop_chat_plan_is_these_flags() -> None:
    assert flags(bench_serve_args(PLAN)) == {
        "--backend": "openai-chat",
        "--base-url": "http://llama-3-8b.tenant-a.svc.cluster.local:8000",
        "--endpoint": "/v1/chat/completions",
        "--model": "llama-3-8b",
        "--dataset-name": "random",
        "--random-input-len": "512",
        "--random-output-len": "16",
        "--random-range-ratio": "0.0",
        "--num-prompts": "8",
        "--request-rate": "inf",
        "--max-concurrency": "4",
        "--seed": "7",
        "--ignore-eos": True,
        "--disable-tqdm": True,
        "--percentile-metrics": "ttft,tpot,itl,e2el",
        "--metric-percentiles": "50,90,99",
        "--save-result": True,
        "--save-detailed": True,
        "--result-dir": "/results",
        "--result-filename": "result.json",
    }


def test_a_completions_plan_uses_vllms_openai_backend() -> None:
    parsed = flags_of(api=Api.COMPLETIONS)
    assert (parsed["--backend"], parsed["--endpoint"]) == ("openai", "/v1/completions")


def test_an_open_loop_plan_sends_at_its_rate_capped_or_not() -> None:
    parsed = flags_of(request_rate=2.5)
    assert parsed["--request-rate"] == "2.5" and "--max-concurrency" not in parsed
    capped = flags_of(request_rate=2.5, concurrency=16)
    assert (capped["--request-rate"], capped["--max-concurrency"]) == ("2.5", "16")


@pytest.mark.parametrize(
    ("count", "rate", "duration", "prompts"),
    [
        (None, 4.0, 30.0, "120"),  # vLLM spreads N arrivals over N / rate seconds
        (500, 4.0, 30.0, "120"),  # whichever comes first
        (50, 4.0, 30.0, "50"),
        (None, 0.01, 30.0, "1"),
        (50, None, 30.0, "50"),  # closed loop: the count; vLLM has no time limit
    ],
)
def test_the_number_of_requests(
    count: int | None, rate: float | None, duration: float, prompts: str
) -> None:
    parsed = flags_of(
        concurrency=8, request_rate=rate, request_count=count, duration_seconds=duration
    )
    assert parsed["--num-prompts"] == prompts


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"request_count": None, "duration_seconds": 60.0}, "request_count"),
        ({"request_count": None}, "request_count"),
        ({"request_count": 0}, "request_count"),
        ({"prompts": ("Tell me a story.",)}, "prompts"),
        ({"endpoint": "http://llama:8000"}, "endpoint"),
        ({"endpoint": "llama:8000/v1"}, "endpoint"),
        ({"model": ""}, "model"),
        ({"request_rate": 0.0}, "request_rate"),
        ({"request_rate": math.inf}, "request_rate"),
        ({"concurrency": 0}, "concurrency"),
        ({"output_tokens": Lengths.uniform(8, 24)}, "output_tokens"),  # ratio 0.5, prompts 0
        ({"output_tokens": Lengths.fixed(0)}, "output_tokens"),
        ({"prompt_tokens": Lengths(LengthKind.UNIFORM, 10, 20, 10)}, "prompt_tokens"),
    ],
)
def test_what_vllms_benchmark_cant_run_is_refused_naming_the_field(
    changes: dict[str, Any], field: str
) -> None:
    plan = replace(PLAN, **changes)
    with pytest.raises(ValueError, match=f"^{field}: "):
        benchmark_job(name="b", namespace="n", plan=plan, image=IMAGE, labels={})


@settings(derandomize=True, database=None)
@given(st.integers(1, 50_000), st.integers(0, 50_000))
def test_a_uniform_range_is_what_vllm_draws_from(low: int, width: int) -> None:
    lengths = Lengths.uniform(low, low + width)
    parsed = flags_of(prompt_tokens=lengths, output_tokens=lengths)
    assert drawn(parsed) == (low, low + width + width % 2)


def test_similar_ratios_share_the_larger() -> None:
    parsed = flags_of(
        prompt_tokens=Lengths.uniform(256, 768),  # 512, ratio 0.5
        output_tokens=Lengths.uniform(65, 191),  # 128, ratio 0.4921875
    )
    assert (parsed["--random-input-len"], parsed["--random-output-len"]) == ("512", "128")
    assert parsed["--random-range-ratio"] == "0.5"
    assert drawn(parsed) == (64, 192)


def test_normal_lengths_run_as_the_uniform_of_the_same_mean_and_deviation() -> None:
    # half-width 64 x sqrt(3) = 110.9 around 512
    normal = Lengths(LengthKind.NORMAL, mean=512, low=1, high=4096, stddev=64.0)
    parsed = flags_of(prompt_tokens=normal, output_tokens=Lengths.uniform(89, 135))
    assert parsed["--random-input-len"] == "512"
    assert drawn(parsed, "input") == (401, 623)
    # half-width 40 x sqrt(3) = 69.3 around 100, clipped to [80, 169]
    clipped = Lengths(LengthKind.NORMAL, mean=100, low=80, high=4096, stddev=40.0)
    parsed = flags_of(prompt_tokens=clipped, output_tokens=Lengths.uniform(32, 68))
    assert (parsed["--random-input-len"], parsed["--random-output-len"]) == ("125", "50")
    assert drawn(parsed, "input") == (80, 170)


# --- the result read back ------------------------------------------------------------------------


def test_the_samples_figures_agree_with_vllms_own_summary() -> None:
    run = samples_from_log(log_of(VLLM_RESULT))
    assert len(run.samples) == 8
    assert_agrees_with_vllm(summarize(run), VLLM_RESULT, abs_ms=1e-9)


def test_each_request_is_a_sample() -> None:
    samples = samples_from_log(log_of(VLLM_RESULT)).samples
    first = samples[0]
    assert first.ok and (first.index, first.prompt_tokens, first.output_tokens) == (0, 519, 16)
    assert first.ttft == 0.1824 and first.itl == tuple(VLLM_RESULT["itls"][0])
    assert first.e2el == VLLM_RESULT["latencies"][0]
    assert first.sent_at == 0.0 and samples[4].sent_at == pytest.approx(0.1964)
    assert samples[3].ok and samples[3].output_tokens == 1 and samples[3].e2el == 0.1957
    throttled, cut = samples[5], samples[7]
    assert not throttled.ok and throttled.prompt_tokens == 512 and throttled.output_tokens == 0
    assert (throttled.failure, throttled.error, throttled.ttft) == (
        FailureKind.HTTP_STATUS,
        "HTTP 429: Too Many Requests",
        None,
    )
    assert not cut.ok and cut.failure is FailureKind.CONNECTION and cut.ttft == 0.2105
    assert cut.error == "connection lost: ClientPayloadError"  # not what the server sent
    assert summarize(samples_from_log(log_of(VLLM_RESULT))).failures == (
        ("CONNECTION: connection lost", 1),
        ("HTTP_STATUS: HTTP 429", 1),
    )


def test_without_latencies_e2el_is_ttft_plus_the_gaps() -> None:
    """Releases before `latencies`: vLLM's latency is the last token chunk's time, which is
    TTFT plus every ITL."""
    older = {k: v for k, v in VLLM_RESULT.items() if k not in ("latencies", "start_times")}
    run = samples_from_log(log_of(older))
    assert_agrees_with_vllm(summarize(run), VLLM_RESULT, abs_ms=1e-9)
    assert {s.sent_at for s in run.samples} == {0.0}


@pytest.mark.parametrize(
    ("error", "failure", "line"),
    [
        ("", FailureKind.HTTP_STATUS, "HTTP error: no reason given"),
        ("Bad Gateway", FailureKind.HTTP_STATUS, "HTTP 502: Bad Gateway"),
        (
            "Model Overloaded",
            FailureKind.HTTP_STATUS,
            "HTTP error: a reason phrase of the server's own",
        ),
        (
            "Never received a valid chunk to calculate TTFT.This response will be marked as failed!",
            FailureKind.EMPTY,
            "no tokens: the stream ended without content",
        ),
        (
            "Traceback (most recent call last):\n  ...\nTimeoutError\n",
            FailureKind.TIMEOUT,
            "TimeoutError",
        ),
        (
            "Traceback (most recent call last):\n  ...\naiohttp.client_exceptions.ClientConnectorError: "
            "Cannot connect to host llama:8000 ssl:default [Connection refused]\n",
            FailureKind.CONNECTION,
            "connection failed: ClientConnectorError",
        ),
        (
            "Traceback (most recent call last):\n  ...\njson.decoder.JSONDecodeError: Expecting value: "
            "line 1 column 1 (char 0)\n",
            FailureKind.MALFORMED,
            "unexpected: JSONDecodeError",
        ),
    ],
)
def test_the_failures_vllms_client_records(error: str, failure: FailureKind, line: str) -> None:
    one = {
        "duration": 1.0,
        "input_lens": [10],
        "output_lens": [0],
        "ttfts": [0.0],
        "itls": [[]],
        "errors": [error],
    }
    (sample,) = run_from_result(one).samples
    assert (sample.ok, sample.failure, sample.error) == (False, failure, line)


@pytest.mark.parametrize(
    ("log", "message"),
    [
        ("", "printed no result"),
        (
            "ValueError: Initial test run failed\n",
            "its last line: ValueError: Initial test run failed",
        ),
        (f'{RESULT_BEGIN}\n{{"duration": 1', "cut short"),
        (f'{RESULT_BEGIN}\n{{"duration": 1\n{RESULT_END}\n', "not JSON"),
        (f"{RESULT_BEGIN}\n[1, 2]\n{RESULT_END}\n", "not a JSON object"),
        (f"{RESULT_BEGIN}\n{{}}\n{RESULT_END}\n", "no duration"),
    ],
)
def test_a_log_without_a_whole_result_is_refused(log: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        samples_from_log(log)


def test_a_result_without_the_details_or_with_uneven_details_is_refused() -> None:
    summary_only = {k: v for k, v in VLLM_RESULT.items() if k not in ("ttfts", "itls")}
    with pytest.raises(ValueError, match=r"no ttfts, itls \(was it saved with --save-detailed"):
        run_from_result(summary_only)
    uneven = {**VLLM_RESULT, "output_lens": [16]}
    with pytest.raises(ValueError, match="output_lens of another length"):
        run_from_result(uneven)
    broken = copy.deepcopy(VLLM_RESULT)
    broken["itls"][2] = ["soon"]
    with pytest.raises(ValueError, match="malformed request"):
        run_from_result(broken)


# --- the container's driver ----------------------------------------------------------------------

FAKE_VLLM = """\
import json, os, sys
args = sys.argv[1:]
with open(os.environ["FAKE_VLLM_ARGV"], "w") as f:
    json.dump(args, f)
print("INFO 09-12 10:15:00 [__init__.py:216] Automatically detected platform cuda.")
code = int(os.environ.get("FAKE_VLLM_EXIT", "0"))
if code:
    print("ValueError: Initial test run failed", flush=True)
    sys.exit(code)
folder = args[args.index("--result-dir") + 1]
name = args[args.index("--result-filename") + 1]
with open(os.environ["FAKE_VLLM_RESULT"]) as source, open(os.path.join(folder, name), "w") as out:
    out.write(source.read())
print("============ Serving Benchmark Result ============", flush=True)
"""


def run_driver(
    tmp_path: Path, exit_code: int = 0
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """The Job's container program, with a stand-in `vllm` on its PATH that saves VLLM_RESULT
    where the flags say (the results folder moved under tmp_path)."""
    vllm = tmp_path / "bin" / "vllm"
    vllm.parent.mkdir()
    vllm.write_text(f"#!{sys.executable}\n{FAKE_VLLM}")
    vllm.chmod(vllm.stat().st_mode | stat.S_IEXEC)
    (tmp_path / "saved.json").write_text(json.dumps(VLLM_RESULT))
    args = bench_serve_args(PLAN)
    args[args.index("--result-dir") + 1] = str(tmp_path)
    env = {
        "PATH": f"{vllm.parent}{os.pathsep}{os.environ['PATH']}",
        "FAKE_VLLM_ARGV": str(tmp_path / "argv.json"),
        "FAKE_VLLM_RESULT": str(tmp_path / "saved.json"),
        "FAKE_VLLM_EXIT": str(exit_code),
    }
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, *args], env=env, capture_output=True, text=True, timeout=30
    )
    return done, args


def test_the_driver_prints_the_saved_result_between_the_markers(tmp_path: Path) -> None:
    done, args = run_driver(tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "argv.json").read_text()) == ["bench", "serve", *args]
    log = done.stdout
    begin, line, end = log.splitlines()[-3:]
    assert (begin, end) == (RESULT_BEGIN, RESULT_END)
    printed = json.loads(line)
    assert "generated_texts" not in printed  # not kept, and the bulk of a log
    assert printed["ttfts"][0] == 0.1824 and printed["duration"] == 0.7102  # microseconds
    assert_agrees_with_vllm(summarize(samples_from_log(log)), VLLM_RESULT, abs_ms=2e-3)
    # a container runtime splits long lines (16 KiB for containerd); the pieces join back
    pieces = [line[i : i + 100] for i in range(0, len(line), 100)]
    split = log.replace(line, "\n".join(pieces))
    assert samples_from_log(split) == samples_from_log(log)


def test_when_the_benchmark_fails_the_driver_fails_with_it_and_prints_no_result(
    tmp_path: Path,
) -> None:
    done, _ = run_driver(tmp_path, exit_code=3)
    assert done.returncode == 3
    assert RESULT_BEGIN not in done.stdout
    with pytest.raises(ValueError, match=r"printed no result .*Initial test run failed"):
        samples_from_log(done.stdout)
