"""A benchmark on a real cluster: vLLM's own load generator as a Kubernetes Job beside the model.

`benchmark_job` renders a `LoadPlan` as a batch/v1 Job whose one CPU-only container runs
`vllm bench serve` from the vllm/vllm-openai image (0.11 or later, where `--backend` replaced
`--endpoint-type`) on vLLM's random dataset; `samples_from_log` turns what that run saved back
into `RequestSample`s, so `domain.serving.metrics` defines the figures of both paths. The pod's
log is the only way back (budcluster reads nothing else of the pod), so the container runs a
small driver (`DRIVER`) that, once the benchmark exits 0, prints its saved result on one line
between two marker lines, without the generated texts and with times rounded to the
microsecond: a run's result must fit the kubelet's container log (10 MiB by default), about
ten bytes per streamed token. What vLLM's flags can't say is refused (ValueError naming the
plan's field) or approximated, as `bench_serve_args` says.
"""

from __future__ import annotations

import http
import json
import math
from collections.abc import Mapping
from typing import Any

from domain.model.load import (
    Api,
    FailureKind,
    LengthKind,
    Lengths,
    LoadPlan,
    LoadRun,
    RequestSample,
)

BENCHMARK_IMAGE = "vllm/vllm-openai:v0.12.0"
"""An image with `vllm bench serve` as this module calls it."""
RESULT_BEGIN = "BUD-RESULT-BEGIN"
RESULT_END = "BUD-RESULT-END"
RESULT_DIR = "/results"
RESULT_FILE = "result.json"
API_KEY_SECRET_KEY = "api-key"
"""The key of `api_key_secret` that holds the endpoint's API key (sent as OPENAI_API_KEY)."""
HF_TOKEN_SECRET_KEY = "token"
"""The key of `hf_token_secret` that holds a Hugging Face token (vLLM's Kubernetes guide)."""
RATIO_TOLERANCE = 0.02
CPU_REQUEST = "1"
MEMORY_REQUEST = "4Gi"
"""vLLM's CLI imports torch and loads the tokenizer: a few GiB, no GPU."""
KUEUE_LABEL_PREFIX = "kueue.x-k8s.io/"
QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"

_ENDPOINTS = {
    Api.CHAT: ("openai-chat", "/v1/chat/completions"),
    Api.COMPLETIONS: ("openai", "/v1/completions"),
}

DRIVER = """\
import json, os, subprocess, sys
args = sys.argv[1:]
code = subprocess.call(["vllm", "bench", "serve"] + args)
if code:
    sys.exit(code)
folder = args[args.index("--result-dir") + 1]
with open(os.path.join(folder, args[args.index("--result-filename") + 1])) as f:
    result = json.load(f)
result.pop("generated_texts", None)
def compact(v):
    if isinstance(v, float):
        return round(v, 6)
    if isinstance(v, list):
        return [compact(x) for x in v]
    return v
print("BUD-RESULT-BEGIN")
print(json.dumps({k: compact(v) for k, v in result.items()}, separators=(",", ":")))
print("BUD-RESULT-END", flush=True)
"""
"""The container's program (`python3 -c DRIVER <vllm bench serve flags>`)."""


def benchmark_job(
    *,
    name: str,
    namespace: str,
    plan: LoadPlan,
    image: str,
    labels: dict[str, str],
    api_key_secret: str | None = None,
    tokenizer: str | None = None,
    hf_token_secret: str | None = None,
    ttl_seconds_after_finished: int = 3600,
) -> dict[str, Any]:
    """The Job that runs `plan` with vLLM's benchmark. Suspended when `labels` name a Kueue
    queue (Kueue admits and resumes it); Kueue's labels stay off the pod. `tokenizer` is the
    model's Hugging Face id when `plan.model` is a served name that is not one (vLLM counts
    and generates prompt tokens with it; `hf_token_secret` for a gated one). Raises ValueError
    naming the plan field that vLLM's benchmark can't run."""
    env: list[dict[str, Any]] = [{"name": "PYTHONUNBUFFERED", "value": "1"}]
    for variable, secret, key in (
        ("OPENAI_API_KEY", api_key_secret, API_KEY_SECRET_KEY),
        ("HF_TOKEN", hf_token_secret, HF_TOKEN_SECRET_KEY),
    ):
        if secret:
            ref = {"secretKeyRef": {"name": secret, "key": key}}
            env.append({"name": variable, "valueFrom": ref})
    container = {
        "name": "main",
        "image": image,
        "command": ["python3", "-c", DRIVER],
        "args": bench_serve_args(plan, tokenizer=tokenizer),
        "env": env,
        "resources": {"requests": {"cpu": CPU_REQUEST, "memory": MEMORY_REQUEST}},
        "volumeMounts": [{"name": "results", "mountPath": RESULT_DIR}],
    }
    pod_labels = {k: v for k, v in labels.items() if not k.startswith(KUEUE_LABEL_PREFIX)}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
        "spec": {
            "suspend": QUEUE_NAME_LABEL in labels,
            "backoffLimit": 0,
            "ttlSecondsAfterFinished": ttl_seconds_after_finished,
            "template": {
                "metadata": {"labels": pod_labels},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [container],
                    "volumes": [{"name": "results", "emptyDir": {}}],
                },
            },
        },
    }


def bench_serve_args(plan: LoadPlan, *, tokenizer: str | None = None) -> list[str]:
    """The `vllm bench serve` flags that run `plan`, as vLLM defines them (serve.py and
    datasets/random.py in vllm/benchmarks).

    vLLM sends a set number of requests: an open-loop plan limited by time sends
    floor(rate x duration) of them (vLLM spreads N arrivals over exactly N / rate seconds); a
    closed-loop plan needs `request_count`, and its `duration_seconds` is not enforced.
    Lengths: see `_length_args`. `request_timeout_seconds` has no equivalent (vLLM's client
    waits up to six hours for a request)."""
    if plan.prompts:
        raise ValueError(
            "prompts: a dataset of prompts can't run in vLLM's benchmark Job; "
            "use generated prompts (prompt_tokens)"
        )
    backend, endpoint = _ENDPOINTS[plan.api]
    if not plan.endpoint.startswith(("http://", "https://")) or not plan.endpoint.endswith("/v1"):
        raise ValueError("endpoint: expected an http(s) URL ending in /v1")
    if not plan.model:
        raise ValueError("model: the served model name is needed")
    args = ["--backend", backend, "--base-url", plan.endpoint.removesuffix("/v1")]
    args += ["--endpoint", endpoint, "--model", plan.model]
    if tokenizer:
        args += ["--tokenizer", tokenizer]
    if plan.request_rate is not None and not 0 < plan.request_rate < math.inf:
        raise ValueError("request_rate: expected requests per second above 0")
    args += ["--dataset-name", "random", *_length_args(plan)]
    args += ["--num-prompts", str(_request_count(plan))]
    args += ["--request-rate", "inf" if plan.request_rate is None else repr(plan.request_rate)]
    if plan.concurrency is not None:
        if plan.concurrency < 1:
            raise ValueError("concurrency: expected at least 1")
        args += ["--max-concurrency", str(plan.concurrency)]
    args += ["--seed", str(plan.seed), "--ignore-eos", "--disable-tqdm"]
    args += ["--percentile-metrics", "ttft,tpot,itl,e2el", "--metric-percentiles", "50,90,99"]
    args += ["--save-result", "--save-detailed", "--result-dir", RESULT_DIR]
    return [*args, "--result-filename", RESULT_FILE]


def _request_count(plan: LoadPlan) -> int:
    by_time = None
    if plan.duration_seconds is not None and plan.request_rate:
        by_time = max(1, math.floor(plan.request_rate * plan.duration_seconds))
    if plan.request_count is not None:
        if plan.request_count < 1:
            raise ValueError("request_count: expected at least 1")
        return min(plan.request_count, by_time or plan.request_count)
    if by_time is None:
        raise ValueError(
            "request_count: vLLM's benchmark sends a set number of requests; give request_count,"
            " or request_rate with duration_seconds"
        )
    return by_time


def _length_args(plan: LoadPlan) -> list[str]:
    """vLLM draws prompt and output lengths uniformly from [floor(L(1 - r)), ceil(L(1 + r))],
    with one ratio r for both: prompt and output lengths needing ratios further apart than
    RATIO_TOLERANCE are refused, closer ones run with the larger."""
    prompt_len, prompt_ratio = _centre_and_ratio(plan.prompt_tokens, "prompt_tokens")
    output_len, output_ratio = _centre_and_ratio(plan.output_tokens, "output_tokens")
    if abs(prompt_ratio - output_ratio) > RATIO_TOLERANCE:
        raise ValueError(
            "output_tokens: vLLM's benchmark spreads prompt and output lengths by one ratio;"
            f" prompt_tokens needs {prompt_ratio:.2f} and output_tokens {output_ratio:.2f}"
        )
    ratio = max(prompt_ratio, output_ratio)
    return [
        *("--random-input-len", str(prompt_len), "--random-output-len", str(output_len)),
        *("--random-range-ratio", repr(ratio)),
    ]


def _centre_and_ratio(lengths: Lengths, field: str) -> tuple[int, float]:
    """vLLM's (L, r) for a distribution of token counts. FIXED is r = 0. UNIFORM [low, high]
    is L = ceil((low + high) / 2), r = (L - low) / L: vLLM then draws from [low, high], and
    one token more above when low + high is odd. NORMAL has no equivalent: it runs as the
    UNIFORM of the same mean and standard deviation (half-width stddev x sqrt(3)), clipped to
    [low, high]."""
    if lengths.kind is LengthKind.FIXED:
        if lengths.mean < 1:
            raise ValueError(f"{field}: expected at least 1 token")
        return lengths.mean, 0.0
    low, high = max(1, lengths.low), lengths.high
    if lengths.kind is LengthKind.NORMAL:
        half_width = lengths.stddev * math.sqrt(3)
        low = max(low, round(lengths.mean - half_width))
        high = min(high, round(lengths.mean + half_width))
    if low > high:
        raise ValueError(f"{field}: the range of lengths is empty")
    centre = math.ceil((low + high) / 2)
    ratio = (centre - low) / centre
    # vLLM rounds the bounds outwards: a ratio a rounding error too large would add a token.
    while ratio > 0 and (
        math.floor(centre * (1 - ratio)) < low or math.ceil(centre * (1 + ratio)) > 2 * centre - low
    ):
        ratio = math.nextafter(ratio, 0.0)
    return centre, ratio


def samples_from_log(log: str) -> LoadRun:
    """The run a benchmark Job's log reports: one sample per request of the result its driver
    printed. Raises ValueError when the log holds no complete result, or one that is not
    vLLM's detailed result."""
    lines = log.splitlines()
    begins = [i for i, line in enumerate(lines) if line.strip() == RESULT_BEGIN]
    if not begins:
        last = next((line.strip() for line in reversed(lines) if line.strip()), "")
        said = f"; its last line: {last[:200]}" if last else ""
        raise ValueError(f"the benchmark printed no result (it failed or is running){said}")
    start = begins[-1] + 1
    end = next((i for i in range(start, len(lines)) if lines[i].strip() == RESULT_END), None)
    if end is None:
        raise ValueError("the benchmark's result is cut short (no end marker in the log)")
    # The JSON is one line, which a container runtime may split: join the pieces back.
    try:
        result = json.loads("".join(lines[start:end]))
    except ValueError as exc:
        raise ValueError(f"the benchmark's result is not JSON: {exc}") from None
    if not isinstance(result, dict):
        raise ValueError("the benchmark's result is not a JSON object")
    return run_from_result(result)


def run_from_result(result: Mapping[str, Any]) -> LoadRun:
    """Samples from the JSON `vllm bench serve --save-result --save-detailed` saves. A request
    succeeded when its error is empty and it has a first token (vLLM leaves ttft 0 on a failed
    one); its E2EL is vLLM's `latencies` entry, or TTFT plus its ITLs when the result has
    none (releases before the field). vLLM does not save when its run started: `sent_at`
    counts from the first request's start (0 for all without `start_times`)."""
    duration = result.get("duration")
    if isinstance(duration, bool) or not isinstance(duration, int | float):
        raise ValueError("the benchmark's result has no duration")
    if not math.isfinite(duration) or duration < 0:
        raise ValueError(f"the benchmark's result has a duration of {duration}")
    columns = ("input_lens", "output_lens", "ttfts", "itls", "errors")
    missing = [c for c in columns if not isinstance(result.get(c), list)]
    if missing:
        raise ValueError(
            f"the benchmark's result has no {', '.join(missing)} (was it saved with"
            " --save-detailed?)"
        )
    count = len(result["errors"])
    optional = [c for c in ("latencies", "start_times") if isinstance(result.get(c), list)]
    uneven = [c for c in (*columns, *optional) if len(result[c]) != count]
    if uneven:
        raise ValueError(f"the benchmark's result has {', '.join(uneven)} of another length")
    latencies = result["latencies"] if "latencies" in optional else [0.0] * count
    try:
        starts = [float(t) for t in result.get("start_times") or [0.0] * count]
        first = min(starts, default=0.0)
        samples = tuple(
            _sample(
                index,
                sent_at=starts[index] - first,
                prompt_tokens=int(result["input_lens"][index]),
                output_tokens=int(result["output_lens"][index] or 0),
                ttft=float(result["ttfts"][index] or 0.0),
                itl=tuple(float(gap) for gap in result["itls"][index] or ()),
                latency=float(latencies[index] or 0.0),
                error=str(result["errors"][index] or ""),
            )
            for index in range(count)
        )
    except (TypeError, ValueError) as exc:
        raise ValueError(f"the benchmark's result has a malformed request: {exc}") from None
    return LoadRun(samples=samples, duration_seconds=float(duration))


def _sample(
    index: int,
    *,
    sent_at: float,
    prompt_tokens: int,
    output_tokens: int,
    ttft: float,
    itl: tuple[float, ...],
    latency: float,
    error: str,
) -> RequestSample:
    first_token = ttft if ttft > 0 else None
    if not error and first_token is not None:
        return RequestSample(
            index,
            sent_at,
            ok=True,
            prompt_tokens=prompt_tokens,
            output_tokens=output_tokens,
            ttft=first_token,
            e2el=latency if latency > 0 else first_token + math.fsum(itl),
            itl=itl,
        )
    failure, reason = _failure(error, streamed=first_token is not None)
    return RequestSample(
        index,
        sent_at,
        ok=False,
        prompt_tokens=prompt_tokens,
        output_tokens=output_tokens,
        ttft=first_token,
        itl=itl,
        failure=failure,
        error=reason,
    )


_HTTP_REASONS = {status.phrase: status.value for status in http.HTTPStatus}
_CONNECTION_ERRORS = ("Connect", "Disconnected", "ClientOSError", "Payload", "Reset", "OSError")


def _failure(error: str, *, streamed: bool = False) -> tuple[FailureKind, str]:
    """What vLLM's client recorded of a failed request, as a failure and a line. It records an
    HTTP error as the status's reason phrase, an exception as its traceback, and a stream
    without a token as a sentence. As the embedded client's, the line names a status or a class,
    never what the server said: a reason phrase of the server's own, or an exception's message
    (which may quote the response), is left out. `streamed`: a token had come."""
    text = error.strip()
    if not text:
        return FailureKind.HTTP_STATUS, "HTTP error: no reason given"
    if text.startswith("Never received a valid chunk"):
        return FailureKind.EMPTY, "no tokens: the stream ended without content"
    if text.startswith("Traceback"):
        last = text.splitlines()[-1].strip()
        kind = last.partition(": ")[0].rsplit(".", 1)[-1][:100]
        if "Timeout" in kind:
            return FailureKind.TIMEOUT, kind
        if any(name in kind for name in _CONNECTION_ERRORS):
            head = "connection lost" if streamed else "connection failed"
            return FailureKind.CONNECTION, f"{head}: {kind}"
        return FailureKind.MALFORMED, f"unexpected: {kind}"
    status = _HTTP_REASONS.get(text)
    if status is not None:
        return FailureKind.HTTP_STATUS, f"HTTP {status}: {text}"
    return FailureKind.HTTP_STATUS, "HTTP error: a reason phrase of the server's own"
