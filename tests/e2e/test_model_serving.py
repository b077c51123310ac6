"""Deploy a model and benchmark it on the embedded default, from outside, as a user would.

deployModel on two GPU types -> RUNNING with an endpoint and workers (seen on deploymentUpdates)
-> the endpoint answers an independent client -> runBenchmark on both -> progress on
benchmarkProgress -> compareBenchmarks names the faster one. Then: every bad input gets a typed
error and stores nothing (loopback and metadata endpoints in any form refused); a second tenant
sees none of it, nor benchmarks it by its URL; scaling and stopping; cancelling a run.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import httpx
import pytest
from gql import GraphQLRequest

from tests.e2e.conftest import (
    A100,
    Service,
    Subscription,
    http_client,
    printed_tokens,
    run_cli,
    ws_client,
)

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("no_tracebacks")]

T4 = "nvidia-tesla-t4"
MODEL = "Qwen/Qwen2.5-1.5B-Instruct"
PROJECT = str(uuid.uuid4())

DEPLOY = """
mutation Deploy($input: DeployModelInput!) {
  deployModel(input: $input) {
    __typename
    ... on Deployment { id name status replicas gpusPerReplica workers { name status } }
    ... on ValidationError { fields { path code message } }
    ... on UserError { code message }
  }
}"""
DEPLOYMENT = """
query Deployment($id: ID!) {
  deployment(id: $id) {
    id status statusMessage endpointUrl endpoints replicas servedModelName
    workers { name status node devices restarts uptimeSeconds utilisation jobId }
    replicaJobs { id status jobType resources { gpuType gpuCount } }
  }
}"""
DEPLOYMENT_UPDATES = """
subscription Deployments($clusterId: ID!, $since: Int) {
  deploymentUpdates(clusterId: $clusterId, since: $since) {
    __typename
    ... on DeploymentSnapshot { sequence reason deployments { id status } }
    ... on DeploymentChange {
      sequence
      deployment { id name status endpointUrl workers { status node } warnings { message } }
    }
  }
}"""
RUN = """
mutation Run($input: RunBenchmarkInput!) {
  runBenchmark(input: $input) {
    __typename
    ... on Benchmark { id status jobId }
    ... on ValidationError { fields { path code message } }
    ... on UserError { code message }
  }
}"""
BENCHMARK = """
query Benchmark($id: ID!) {
  benchmark(id: $id) {
    id status statusMessage
    configuration { key value }
    result {
      successfulRequests failedRequests outputTokens durationSeconds
      requestThroughput outputThroughput
      ttft { meanMs p50Ms p90Ms p99Ms maxMs count }
      tpot { meanMs } itl { meanMs count } e2el { meanMs }
    }
    samples(first: 100) { index ok outputTokens ttftMs itlMs }
  }
}"""
PROGRESS = """
subscription Progress($id: ID!) {
  benchmarkProgress(id: $id) {
    id status progress { requestsDone outputThroughput ttftMeanMs }
    result { successfulRequests }
  }
}"""
PROGRESSED = "query($id: ID!) { benchmark(id: $id) { progress { requestsDone } } }"
COMPARE = """
query Compare($ids: [ID!]!) {
  compareBenchmarks(ids: $ids) {
    benchmarks { id }
    differences { key values }
    best { metric benchmarkId value }
  }
}"""
FINAL = ("COMPLETED", "FAILED", "CANCELLED")


async def call(service: Service, token: str, document: str, **variables: Any) -> dict[str, Any]:
    async with http_client(service, token) as session:
        result: dict[str, Any] = await session.execute(
            GraphQLRequest(document, variable_values=variables)
        )
    return result


async def deploy(service: Service, token: str, **fields: Any) -> dict[str, Any]:
    assert service.cluster_id is not None
    payload = {
        "name": "qwen",
        "projectId": PROJECT,
        "clusterId": service.cluster_id,
        "model": MODEL,
        "gpuType": A100,
        "concurrency": 16,
        **fields,
    }
    made: dict[str, Any] = (await call(service, token, DEPLOY, input=payload))["deployModel"]
    return made


async def until(
    service: Service, token: str, document: str, root: str, done: Any, timeout: float = 60.0
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    seen: dict[str, Any] = {}
    while time.monotonic() < deadline:
        seen = (await call(service, token, document, **done["vars"]))[root]
        if done["test"](seen):
            return seen
        await asyncio.sleep(0.2)
    raise AssertionError(f"not reached in {timeout}s: {seen}")


async def running(service: Service, token: str, deployment_id: str) -> dict[str, Any]:
    return await until(
        service,
        token,
        DEPLOYMENT,
        "deployment",
        {"vars": {"id": deployment_id}, "test": lambda d: d["status"] == "RUNNING"},
    )


async def finished(service: Service, token: str, benchmark_id: str) -> dict[str, Any]:
    return await until(
        service,
        token,
        BENCHMARK,
        "benchmark",
        {"vars": {"id": benchmark_id}, "test": lambda b: b["status"] in FINAL},
        timeout=90.0,
    )


def run_input(**fields: Any) -> dict[str, Any]:
    return {
        "name": "bench",
        "projectId": PROJECT,
        "concurrency": 4,
        "requestCount": 12,
        "promptTokens": {"mean": 256},
        "outputTokens": {"mean": 24},
        **fields,
    }


async def test_deploy_on_two_gpu_types_benchmark_both_and_compare(embedded: Service) -> None:
    token = embedded.admin_token
    assert token is not None and embedded.cluster_id is not None
    updates = await Subscription(
        ws_client(embedded, token),
        {"clusterId": embedded.cluster_id},
        document=DEPLOYMENT_UPDATES,
        root="deploymentUpdates",
    ).open()
    await updates.wait_for(lambda u: bool(u))
    assert updates.updates[0]["__typename"] == "DeploymentSnapshot"

    a100 = await deploy(embedded, token, name="qwen-a100", gpuType=A100)
    t4 = await deploy(embedded, token, name="qwen-t4", gpuType=T4)
    assert a100["__typename"] == t4["__typename"] == "Deployment", (a100, t4)
    assert a100["status"] == "DEPLOYING" and a100["workers"][0]["status"] == "PENDING"

    served = {
        name: await running(embedded, token, d["id"]) for name, d in (("a100", a100), ("t4", t4))
    }
    for d in served.values():
        assert d["endpointUrl"].endswith("/v1") and d["endpoints"] == [
            "CHAT_COMPLETIONS",
            "COMPLETIONS",
        ]
        (worker,) = d["workers"]
        assert worker["status"] == "RUNNING" and worker["node"] and worker["devices"] == [0]
        assert d["replicaJobs"][0]["jobType"] == "SERVICE"
        assert d["replicaJobs"][0]["status"] == "RUNNING"
    assert served["t4"]["replicaJobs"][0]["resources"]["gpuType"] == T4

    # the live stream saw each go RUNNING, with its endpoint and worker
    def saw_running(u: list[dict[str, Any]]) -> bool:
        done = {
            c["deployment"]["name"]
            for c in u
            if c["__typename"] == "DeploymentChange" and c["deployment"]["status"] == "RUNNING"
        }
        return done >= {"qwen-a100", "qwen-t4"}

    changes = await updates.wait_for(saw_running)
    sequences = [c["sequence"] for c in changes]
    assert sequences == sorted(sequences)
    assert all(c["deployment"]["warnings"] == [] for c in changes[1:]), changes  # one replica
    await updates.close()

    # resuming with `since` replays exactly the changes after it
    since = changes[1]["sequence"]
    resumed = await Subscription(
        ws_client(embedded, token),
        {"clusterId": embedded.cluster_id, "since": since},
        document=DEPLOYMENT_UPDATES,
        root="deploymentUpdates",
    ).open()
    later = [c for c in changes[1:] if c["sequence"] > since]
    replayed = await resumed.wait_for(lambda u: len(u) >= len(later))
    assert [c["sequence"] for c in replayed[: len(later)]] == [c["sequence"] for c in later]
    assert all(c["__typename"] == "DeploymentChange" for c in replayed)
    await resumed.close()

    # the endpoint answers an independent OpenAI-style client
    async with httpx.AsyncClient(timeout=30) as client:
        models = (await client.get(f"{served['a100']['endpointUrl']}/models")).json()
        assert [m["id"] for m in models["data"]] == [MODEL]
        reply = await client.post(
            f"{served['a100']['endpointUrl']}/chat/completions",
            json={"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 5},
        )
        assert reply.status_code == 200 and reply.json()["usage"]["completion_tokens"] == 5

    ids = {}
    for name, d in (("a100", a100), ("t4", t4)):
        made = (
            await call(
                embedded, token, RUN, input=run_input(name=f"bench-{name}", deploymentId=d["id"])
            )
        )["runBenchmark"]
        assert made["__typename"] == "Benchmark" and made["status"] == "PENDING", made
        ids[name] = made["id"]

    progress = await Subscription(
        ws_client(embedded, token),
        {"id": ids["t4"]},
        document=PROGRESS,
        root="benchmarkProgress",
    ).open()
    seen = await progress.wait_for(lambda u: bool(u) and u[-1]["status"] in FINAL, timeout=90.0)
    assert any(u["progress"] and u["progress"]["requestsDone"] > 0 for u in seen), seen
    assert seen[-1]["status"] == "COMPLETED" and seen[-1]["result"]["successfulRequests"] == 12
    await progress.close()

    results = {name: await finished(embedded, token, i) for name, i in ids.items()}
    for b in results.values():
        assert b["status"] == "COMPLETED", b
        r = b["result"]
        assert r["successfulRequests"] == 12 and r["failedRequests"] == 0
        assert r["outputTokens"] == 12 * 24
        assert r["itl"]["count"] == 12 * 23  # every gap between 24 streamed tokens
        ttft = r["ttft"]
        assert ttft["p50Ms"] <= ttft["p90Ms"] <= ttft["p99Ms"] <= ttft["maxMs"]
        assert len(b["samples"]) == 12 and all(s["ok"] for s in b["samples"])
        assert all(len(s["itlMs"]) == 23 for s in b["samples"])
    a, t = results["a100"]["result"], results["t4"]["result"]
    assert a["tpot"]["meanMs"] < t["tpot"]["meanMs"]
    assert a["outputThroughput"] > t["outputThroughput"]

    comparison = (await call(embedded, token, COMPARE, ids=[ids["a100"], ids["t4"]]))[
        "compareBenchmarks"
    ]
    differences = {d["key"]: d["values"] for d in comparison["differences"]}
    assert differences["gpu_type"] == [A100, T4]
    best = {b["metric"]: b["benchmarkId"] for b in comparison["best"]}
    assert best["tpot"] == best["ttft"] == best["outputThroughput"] == ids["a100"]


async def test_bad_inputs_get_typed_errors_and_store_nothing(embedded: Service) -> None:
    token = embedded.admin_token
    assert token is not None and embedded.cluster_id is not None
    cases: list[tuple[dict[str, Any], str, str]] = [
        ({"model": "not a model"}, "model", "UNKNOWN_MODEL_FORMAT"),
        ({"replicas": -1}, "replicas", "INVALID"),
        ({"gpusPerReplica": 2}, "gpusPerReplica", "TENSOR_PARALLEL_MISMATCH"),
        (
            {"gpuType": T4, "engineArgs": {"tensorParallelSize": 8}},
            "engineArgs.tensorParallelSize",
            "EXCEEDS_CLUSTER",
        ),
        ({"gpuType": "nvidia-h100-80gb"}, "gpuType", "NOT_ON_CLUSTER"),
        ({"projectId": "nope"}, "projectId", "MALFORMED_ID"),
        ({"concurrency": 0}, "engineArgs.maxNumSeqs", "INVALID"),
        ({"concurrency": 4, "engineArgs": {"maxNumSeqs": 8}}, "concurrency", "INVALID"),
    ]
    for fields, path, code in cases:
        made = await deploy(embedded, token, name="bad", **fields)
        assert made["__typename"] == "ValidationError", made
        assert (path, code) in [(f["path"], f["code"]) for f in made["fields"]], made
    listed = await call(embedded, token, "{ deployments(first: 100) { edges { node { name } } } }")
    assert "bad" not in [e["node"]["name"] for e in listed["deployments"]["edges"]]

    bad_runs: list[tuple[dict[str, Any], str, str]] = [
        *(
            (
                {"endpointUrl": url, "clusterId": embedded.cluster_id, "model": "m"},
                "endpointUrl",
                "FORBIDDEN_ENDPOINT",
            )
            for url in (
                "http://169.254.169.254/v1",
                "http://[::ffff:169.254.169.254]/v1",
                "http://127.0.0.1:9/v1",  # loopback: this machine's own services
                "http://localhost:9/v1",
            )
        ),
        ({}, "deploymentId", "REQUIRED"),
        ({"deploymentId": str(uuid.uuid4()), "concurrency": 0}, "concurrency", "INVALID"),
    ]
    for fields, path, code in bad_runs:
        made = (await call(embedded, token, RUN, input=run_input(name="bad-run", **fields)))[
            "runBenchmark"
        ]
        assert made["__typename"] == "ValidationError", made
        assert (path, code) in [(f["path"], f["code"]) for f in made["fields"]], made
    gone = (await call(embedded, token, RUN, input=run_input(deploymentId=str(uuid.uuid4()))))[
        "runBenchmark"
    ]
    assert gone["__typename"] == "NotFoundError", gone


async def test_scale_stop_cancel_unreachable_and_another_tenant(embedded: Service) -> None:
    token = embedded.admin_token
    assert token is not None and embedded.cluster_id is not None
    made = await deploy(embedded, token, name="qwen-scaled", gpuType=A100)
    d = await running(embedded, token, made["id"])

    scale = """mutation($id: ID!, $n: Int!) { scaleDeployment(id: $id, replicas: $n) {
      __typename ... on Deployment { replicas workers { status } } ... on UserError { code } } }"""
    stop = """mutation($id: ID!) { stopDeployment(id: $id) {
      __typename ... on Deployment { status endpointUrl } ... on UserError { code } } }"""
    assert (await call(embedded, token, scale, id=d["id"], n=2))["scaleDeployment"]["replicas"] == 2
    two = await until(
        embedded,
        token,
        DEPLOYMENT,
        "deployment",
        {
            "vars": {"id": d["id"]},
            "test": lambda x: [w["status"] for w in x["workers"]] == ["RUNNING", "RUNNING"],
        },
    )
    places = [(w["node"], tuple(w["devices"])) for w in two["workers"]]
    assert all(node for node, _ in places) and len(set(places)) == 2, places

    # another tenant sees none of it and can change none of it
    issued = await run_cli(embedded.env, "token", "create", "--name", "other", "--new-tenant")
    other = printed_tokens(issued.stdout)[0]
    assert (await call(embedded, other, DEPLOYMENT, id=d["id"]))["deployment"] is None
    assert (await call(embedded, other, scale, id=d["id"], n=0))["scaleDeployment"][
        "__typename"
    ] == "NotFoundError"
    theirs = await call(embedded, other, "{ deployments { edges { node { id } } } }")
    assert theirs["deployments"]["edges"] == []

    # a long run, cancelled: CANCELLED, what it measured kept; the other tenant cannot touch it
    long_run = (
        await call(
            embedded,
            token,
            RUN,
            input=run_input(
                name="bench-long", deploymentId=d["id"], requestCount=None, durationSeconds=600
            ),
        )
    )["runBenchmark"]
    await until(
        embedded,
        token,
        BENCHMARK,
        "benchmark",
        {"vars": {"id": long_run["id"]}, "test": lambda b: b["status"] == "RUNNING"},
    )
    cancel = """mutation($id: ID!) { cancelBenchmark(id: $id) {
      __typename ... on Benchmark { status } ... on UserError { code } } }"""
    assert (await call(embedded, other, cancel, id=long_run["id"]))["cancelBenchmark"][
        "__typename"
    ] == "NotFoundError"
    assert (await call(embedded, other, BENCHMARK, id=long_run["id"]))["benchmark"] is None
    await until(  # let it measure something first
        embedded,
        token,
        PROGRESSED,
        "benchmark",
        {
            "vars": {"id": long_run["id"]},
            "test": lambda b: b["progress"] is not None and b["progress"]["requestsDone"] > 0,
        },
    )
    assert (await call(embedded, token, cancel, id=long_run["id"]))["cancelBenchmark"][
        "status"
    ] == "CANCELLED"
    kept = await until(
        embedded,
        token,
        BENCHMARK,
        "benchmark",
        {"vars": {"id": long_run["id"]}, "test": lambda b: b["result"] is not None},
    )
    assert kept["status"] == "CANCELLED" and kept["result"]["successfulRequests"] > 0

    # its endpoint URL is the deployment: another tenant's is not found, however it is written
    for url in (d["endpointUrl"], d["endpointUrl"].replace("127.0.0.1", "localhost")):
        theirs_by_url = (
            await call(
                embedded,
                other,
                RUN,
                input=run_input(
                    name="bench-theirs", endpointUrl=url, clusterId=embedded.cluster_id, model="m"
                ),
            )
        )["runBenchmark"]
        assert theirs_by_url == {
            "__typename": "NotFoundError",
            "code": "NOT_FOUND",
            "message": f"deployment {url} not found",
        }

    stopped = (await call(embedded, token, stop, id=d["id"]))["stopDeployment"]
    assert stopped == {"__typename": "Deployment", "status": "STOPPED", "endpointUrl": None}
    assert (await call(embedded, token, scale, id=d["id"], n=1))["scaleDeployment"] == {
        "__typename": "ConflictError",
        "code": "ALREADY_STOPPED",
    }
    after = await call(embedded, token, DEPLOYMENT, id=d["id"])
    statuses = [j["status"] for j in after["deployment"]["replicaJobs"]]
    assert statuses and all(s in ("CANCELLED", "COMPLETED") for s in statuses), statuses
