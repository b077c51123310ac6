"""Traces, captured in memory, on PostgreSQL with arq on Redis and a Kubernetes API emulator.

Covers: one trace follows a mutation sent with the caller's `traceparent` from the HTTP request
through the GraphQL operation, the unit of work's commit (its SQL, the outbox insert among it),
the reactions, queueing the hand-over on Redis, the worker's run of it (a child of the span that
queued it, through the payload, not through the process's context) and the call to the cluster
(the Kubernetes client's POST of the Job); no span carries the token, the kubeconfig's
credentials or the document's text, and resolver arguments are kept without secrets; a task
queued while nothing records carries no trace context, and one that carries it runs as before.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode

from adapters.secrets.keyring import write_new_key
from adapters.tasks import TRACE_CONTEXT
from adapters.tasks.arq import deserialize, job_id
from budcluster.bootstrap import App
from budcluster.http import create_app
from domain.model.job import JobStatus
from domain.model.principal import Scope
from tests.integration.conftest import redis_url
from tests.integration.test_app_flows import ALICE, make_app, sim_cluster, submission
from tests.integration.test_graphql_api import Api
from tests.support import k8s_nodes
from tests.support.kube_emulator import DEFAULT_TOKEN, kubeconfig_for, running_emulator
from tests.support.tracing import Capture, Trace, capture
from workers.settings import worker_for

REGISTER = """
mutation Register($input: RegisterClusterInput!) {
  registerCluster(input: $input) { __typename ... on Cluster { id } ... on UserError { code } }
}
"""
SUBMIT = """
mutation SubmitTraining($input: SubmitJobInput!) {
  submitJob(input: $input) { __typename ... on Job { id status } ... on UserError { code } }
}
"""
CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"


@pytest.fixture
def spans() -> Capture:
    return capture()


@pytest.fixture
async def traced(pg_url: str, prefix: str, tmp_path: Path) -> AsyncIterator[App]:
    keys = tmp_path / "keys"
    write_new_key(keys, bits=3072)
    app = await make_app(
        pg_url,
        redis_url=redis_url(),
        tasks="arq",
        events="redis",
        redis_prefix=prefix,
        keys_dir=keys,
        tracing=True,
        kube_plain_http=True,  # the emulator speaks plain HTTP
    )
    try:
        yield app
    finally:
        await app.close()


async def run_tasks(app: App) -> None:
    await worker_for(app, burst=True, handle_signals=False).main()


def attribute(span: ReadableSpan, name: str) -> Any:
    return (span.attributes or {}).get(name)


async def test_one_trace_follows_a_mutation_to_the_worker_and_the_cluster(
    traced: App, spans: Capture
) -> None:
    app = traced
    async with running_emulator() as emulator:
        emulator.serve_kueue("v1beta2")
        emulator.seed(k8s_nodes.a100_gfd_node())
        kubeconfig = kubeconfig_for(emulator)
        transport = httpx.ASGITransport(app=create_app(app, manage_lifecycle=False))
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            api = Api(app, client, "")
            admin = await api.token()
            spans.start()
            try:
                registered = await api.ok(
                    REGISTER,
                    {"input": {"name": "lab", "platform": "ON_PREM", "kubeconfig": kubeconfig}},
                    token=admin,
                )
                cluster_id = registered["registerCluster"]["id"]
                await run_tasks(app)  # connects it
                response = await client.post(
                    "/graphql",
                    json={
                        "query": SUBMIT,
                        "variables": {
                            "input": api.job_input(
                                clusterId=cluster_id,
                                jobType="BATCH",
                                spec={"image": "ghcr.io/acme/train:1.4", "command": ["train"]},
                                maxDurationSeconds=3600,
                            )
                        },
                    },
                    headers={
                        "Authorization": f"Bearer {admin}",
                        "traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-01",
                    },
                )
                assert response.json()["data"]["submitJob"]["__typename"] == "Job", response.text
                await run_tasks(app)  # hands it over
                posted = [o.raw for (r, _, _), o in emulator.objects.items() if r.plural == "jobs"]
                assert len(posted) == 1
            finally:
                captured = spans.stop()

    everything = Trace(captured)
    submit = Trace([s for s in captured if format(s.context.trace_id, "032x") == CALLER_TRACE])

    server = submit.one("POST /graphql")
    assert server.kind is SpanKind.SERVER
    assert server.parent is not None and format(server.parent.span_id, "016x") == CALLER_SPAN
    assert attribute(server, "budcluster.request_id")

    operation = submit.one("mutation SubmitTraining")
    assert submit.parent(operation) is server
    assert attribute(operation, "graphql.operation.name") == "SubmitTraining"
    resolver = submit.one("GraphQL Resolving: submitJob")
    assert submit.parent(resolver) is operation

    [commit] = [
        s
        for s in submit.named("commit")
        if "SUBMITTED" in str(attribute(s, "budcluster.outbox.written"))
    ]
    assert submit.under(resolver, commit)
    statements = [
        s for s in submit.spans if s.kind is SpanKind.CLIENT and submit.parent(s) is commit
    ]
    outbox_inserts = [
        s for s in statements if "INSERT INTO outbox_event" in str(attribute(s, "db.statement"))
    ]
    assert outbox_inserts, [attribute(s, "db.statement") for s in statements]

    sent = submit.one("send submit_workload")
    assert sent.kind is SpanKind.PRODUCER
    assert submit.under(operation, sent)
    assert any(r.name == "react" for r in submit.ancestors(sent))
    assert attribute(sent, "messaging.system") == "arq"
    assert any(
        attribute(s, "db.system") == "redis" for s in submit.spans if submit.parent(s) is sent
    )

    processed = submit.one("process submit_workload")
    assert processed.kind is SpanKind.CONSUMER
    assert submit.parent(processed) is sent
    assert processed.status.status_code is not StatusCode.ERROR

    cluster_call = submit.one("cluster submit")
    assert submit.under(processed, cluster_call)
    [post] = [
        s
        for s in submit.spans
        if s.kind is SpanKind.CLIENT
        and submit.under(cluster_call, s)
        and "POST" in (attribute(s, "http.request.method"), attribute(s, "http.method"))
    ]
    url = attribute(post, "url.full") or attribute(post, "http.url")
    assert "/apis/batch/v1/namespaces/" in str(url)
    assert all(s.context.trace_id == server.context.trace_id for s in submit.spans)

    # the registration's trace: the kubeconfig went through a resolver, a commit and a task
    [register] = everything.named("mutation Register")
    assert attribute(everything.parent(register) or register, "http.route") in ("/graphql", None)
    [register_resolver] = everything.named("GraphQL Resolving: registerCluster")
    assert "<removed>" in str(attribute(register_resolver, "graphql.param.input"))
    text = everything.text()
    for secret in (admin, DEFAULT_TOKEN, kubeconfig, "kubeconfig: apiVersion"):
        assert secret not in text
    assert "mutation SubmitTraining(" not in text and "registerCluster(input" not in text


async def test_a_task_carries_the_trace_only_when_it_is_recorded(
    traced: App, spans: Capture
) -> None:
    app = traced
    assert app.arq is not None
    cluster = await sim_cluster(app)

    async def payload(job_key: str) -> dict[str, Any]:
        assert app.arq is not None
        raw = await app.arq.get(f"arq:job:{job_id(app.settings.queue_name, job_key)}")
        assert raw is not None
        kwargs: dict[str, Any] = deserialize(raw)["k"]
        return kwargs

    untraced = await app.jobs.submit(ALICE, submission(cluster.id))
    assert TRACE_CONTEXT not in await payload(f"submit:{untraced.id}:0")

    spans.start()
    try:
        with trace.get_tracer("test").start_as_current_span("caller") as caller:
            traced_job = await app.jobs.submit(ALICE, submission(cluster.id))
        carried = (await payload(f"submit:{traced_job.id}:0"))[TRACE_CONTEXT]
        await run_tasks(app)
    finally:
        captured = Trace(spans.stop())
    trace_id = format(caller.get_span_context().trace_id, "032x")
    assert carried["traceparent"].split("-")[1] == trace_id
    runs = captured.named("process submit_workload")
    [run] = [s for s in runs if format(s.context.trace_id, "032x") == trace_id]
    assert captured.parent(run) is captured.one("send submit_workload")
    [other] = [s for s in runs if s is not run]  # queued before: a trace of its own
    assert other.parent is None

    for job in (untraced, traced_job):  # both ran: the trace context is not an argument
        found = await app.jobs.get(ALICE, job.id)
        assert found is not None
        assert found.status is not JobStatus.PENDING, found.status
    assert json.dumps(carried)  # plain JSON, as every arq payload


async def test_tokens_and_query_strings_are_kept_out_of_spans(traced: App, spans: Capture) -> None:
    """A tenant's requests, traced: its token appears in no span, nor does a GET request's
    query string (the document and its variables)."""
    app = traced
    cluster = await sim_cluster(app)
    transport = httpx.ASGITransport(app=create_app(app, manage_lifecycle=False))
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        api = Api(app, client, str(cluster.id))
        tenant = await api.token(Scope.JOBS_READ, Scope.JOBS_WRITE)
        marker = str(uuid.uuid4())
        spans.start()
        try:
            answer = await api.ok(SUBMIT, {"input": api.job_input(name="t1")}, token=tenant)
            got = await client.get(
                "/graphql",
                params={
                    "query": "query Find($id: ID!) { job(id: $id) { id } }",
                    "variables": json.dumps({"id": marker}),
                },
                headers={"Authorization": f"Bearer {tenant}"},
            )
        finally:
            captured = Trace(spans.stop())
    assert answer["submitJob"]["__typename"] == "Job"
    assert got.status_code == 200 and got.json()["data"] == {"job": None}, got.text
    assert captured.named("mutation SubmitTraining") and captured.named("query Find")
    text = captured.text()
    assert tenant not in text and tenant.split("_")[1] not in text
    assert "job(id" not in text  # a GET's query string is left out of its request's span
    [get] = captured.named("GET /graphql")
    assert str(attribute(get, "http.target")) == "/graphql"
    assert marker not in repr(dict(get.attributes or {}))
    # (the resolver's span keeps its arguments, as the audit trail keeps inputs)
    assert attribute(captured.one("GraphQL Resolving: job"), "graphql.param.id") == marker
