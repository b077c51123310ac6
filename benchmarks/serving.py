"""How true the simulated model endpoint is to its stated performance model, as a benchmark sees it.

Serves one model on the simulated endpoint (adapters/simulated/serving.py) per GPU type, loads it
with the benchmark client (adapters/loadgen) at several concurrencies, and prints what the client
measured (TTFT, TPOT, output throughput, with vLLM's definitions) beside what the performance model
(adapters/simulated/performance.py) predicts for a single request, and the error at concurrency 1.
Under load the model's queueing (prefills in turn, a batch's per-token time) makes the measured
figures grow; the table shows by how much, per GPU type.

    .venv/bin/python -m benchmarks.serving [--model Qwen/Qwen2.5-7B-Instruct] [--requests 32]
"""

from __future__ import annotations

import argparse
import asyncio

from adapters.loadgen.client import StreamingLoadGenerator
from adapters.simulated.performance import PerformanceModel
from adapters.simulated.serving import ServedModel, SimulatedServing
from domain.model.load import Lengths, LoadPlan
from domain.serving.metrics import summarize

GPUS = ("nvidia-h100-80gb", "nvidia-a100-80gb", "nvidia-l4", "nvidia-tesla-t4")


async def measure(args: argparse.Namespace) -> None:
    served = {
        gpu: ServedModel(
            model=args.model,
            gpu_type=gpu,
            gpus_per_replica=1,
            replicas=1,
            max_concurrency=256,
            max_model_len=8192,
        )
        for gpu in GPUS
    }

    async def lookup(key: str) -> ServedModel | None:
        return served.get(key)

    serving = SimulatedServing(lookup)
    await serving.start()
    model = PerformanceModel()
    client = StreamingLoadGenerator()
    print(
        f"{args.model}, prompt {args.prompt} words, output {args.output} tokens, "
        f"{args.requests} requests per run"
    )
    print(
        f"{'gpu':<18} {'users':>5} {'ttft ms':>9} {'model':>7} {'err':>6} {'tpot ms':>8} "
        f"{'model':>7} {'err':>6} {'out tok/s':>10}"
    )
    try:
        for gpu in GPUS:
            profile = model.profile(model=args.model, gpu_type=gpu)
            expected_ttft = profile.ttft_seconds(args.prompt)
            expected_tpot = profile.time_per_output_token(1, args.prompt + args.output // 2)
            for users in args.users:
                plan = LoadPlan(
                    endpoint=serving.endpoint(gpu),
                    model=args.model,
                    concurrency=users,
                    request_count=max(args.requests, users),
                    prompt_tokens=Lengths.fixed(args.prompt),
                    output_tokens=Lengths.fixed(args.output),
                )
                result = summarize(await client.run(plan))
                assert result.ttft is not None and result.tpot is not None
                ttft, tpot = result.ttft.mean, result.tpot.mean
                errors = (
                    (
                        f"{(ttft / expected_ttft - 1) * 100:>+5.1f}%",
                        f"{(tpot / expected_tpot - 1) * 100:>+5.1f}%",
                    )
                    if users == 1
                    else ("", "")
                )
                print(
                    f"{gpu:<18} {users:>5} {ttft * 1000:>9.1f} {expected_ttft * 1000:>7.1f} "
                    f"{errors[0]:>6} {tpot * 1000:>8.2f} {expected_tpot * 1000:>7.2f} "
                    f"{errors[1]:>6} {result.output_throughput:>10.0f}"
                )
    finally:
        await serving.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="Qwen/Qwen2.5-7B-Instruct")
    parser.add_argument("--prompt", type=int, default=512)
    parser.add_argument("--output", type=int, default=64)
    parser.add_argument("--requests", type=int, default=16)
    parser.add_argument("--users", type=int, nargs="+", default=[1, 8, 32])
    asyncio.run(measure(parser.parse_args()))


if __name__ == "__main__":
    main()
