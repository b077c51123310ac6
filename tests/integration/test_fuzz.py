"""Thousands of GraphQL requests generated from the schema, and not one server fault.

hypothesis-graphql writes queries and mutations from the schema the code builds: valid ones
(every field, argument and input the schema allows, with hostile strings, huge numbers, nulls)
and invalid ones (wrong types, missing arguments). Ids are drawn from the objects that exist
(a cluster, jobs, a reservation) as well as made up, so commands reach the services and not
only the id parser. Each request goes over HTTP into the app in-process, on SQLite, as an
operator (who may call everything). Every answer must be a defined one: no HTTP 5xx, no
"Internal error.", an `extensions.code` on every error, and no error logged with a traceback.

Subscriptions are run as the WebSocket runs them (their first message, then closed). The
examples are derandomised (the same on every run: a test that finds a new fault on one run and
not the next is a flaky test); FUZZ_EXAMPLES sets how many (default 200 of each of the four
kinds of query and mutation, and a fifth of that of each kind of subscription); FUZZ_EXPLORE=1
draws new examples on each run, to look for faults beyond the suite's. The default keeps the
suite's time: about 80 ms an example, two thirds of it hypothesis drawing the document (600 took
four minutes, a quarter of the suite); run `FUZZ_EXAMPLES=600 FUZZ_EXPLORE=1` after a schema change.
"""

from __future__ import annotations

import asyncio
import logging
import os
import string
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import graphql
import httpx
from graphql import ExecutionResult
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_graphql import Mode, mutations, nodes, queries

from budcluster import bootstrap, migrate
from budcluster.bootstrap import App
from budcluster.http import create_app
from budcluster.http.view import GraphQLView
from budcluster.runtime import Runtime
from budcluster.settings import Settings
from domain.model.ids import TenantId
from domain.model.principal import Principal, Scope
from schema.context import Context
from schema.schema import schema as api_schema
from tests.integration.test_app_flows import sim_cluster

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "200"))


class Recorder(logging.Handler):
    """Every record at ERROR or above, or with a traceback, from any logger."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.faults: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.ERROR or record.exc_info:
            self.faults.append(record)


class Harness:
    view: GraphQLView
    principal: Principal
    runtime: Runtime

    def __init__(self, app: App, client: httpx.AsyncClient, token: str, ids: list[str]) -> None:
        self.app = app
        self.client = client
        self.token = token
        self.ids = ids
        self.sent = 0

    @classmethod
    async def start(cls, url: str) -> Harness:
        app = await bootstrap.api(
            Settings(
                database_url=url,
                token_pepper=b"f" * 32,
                sim_poll_seconds=0.05,
                rate_points_per_minute=10**9,
                rate_burst=10**9,
            )
        )
        await migrate.upgrade(app.db.engine)
        runtime = Runtime(app)
        await runtime.start()
        cluster = await sim_cluster(app)
        tenant = TenantId(uuid.uuid4())
        issued = await app.tokens.issue(
            tenant_id=tenant, name="fuzz", scopes=frozenset({Scope.ADMIN}), operator=True
        )
        asgi = create_app(app, manage_lifecycle=False)
        transport = httpx.ASGITransport(app=asgi)
        client = httpx.AsyncClient(transport=transport, base_url="http://test", timeout=60)
        harness = cls(app, client, issued.secret, [str(cluster.id)])
        harness.view = asgi.state.view
        harness.runtime = runtime
        harness.principal = await app.tokens.authenticate(issued.secret)
        await harness.seed(str(cluster.id))
        return harness

    async def seed(self, cluster_id: str) -> None:
        """A few objects for generated ids to name: jobs and a reservation."""
        for i in range(3):
            body = await self.post(
                """mutation($input: SubmitJobInput!) { submitJob(input: $input) {
                     ... on Job { id } } }""",
                {
                    "input": {
                        "name": f"seed-{i}",
                        "projectId": str(uuid.uuid4()),
                        "clusterId": cluster_id,
                        "jobType": "BATCH",
                        "deploymentType": "DOCKER",
                        "resources": {"gpuType": "nvidia-a100-80gb", "gpuCount": 1},
                        "estimatedDurationSeconds": 3600,
                    }
                },
            )
            self.ids.append(body["data"]["submitJob"]["id"])
        start = datetime.now(UTC) + timedelta(hours=1)
        body = await self.post(
            """mutation($input: CapacityReservationInput!) {
                 createCapacityReservation(input: $input) { ... on CapacityReservation { id } } }""",
            {
                "input": {
                    "clusterId": cluster_id,
                    "name": "seed",
                    "clusterQueue": "default",
                    "flavor": "nvidia-a100-80gb",
                    "gpuCount": 1,
                    "start": start.isoformat(),
                    "end": (start + timedelta(hours=1)).isoformat(),
                }
            },
        )
        self.ids.append(body["data"]["createCapacityReservation"]["id"])

    async def post(self, query: str, variables: dict[str, Any] | None = None) -> Any:
        response = await self.client.post(
            "/graphql",
            json={"query": query, "variables": variables},
            headers={"Authorization": f"Bearer {self.token}"},
        )
        return response.json()

    async def check(self, document: str) -> None:
        self.sent += 1
        try:
            response = await self.client.post(
                "/graphql",
                json={"query": document},
                headers={"Authorization": f"Bearer {self.token}"},
            )
        except BaseException as exc:  # the request never answered (e.g. a stray cancellation)
            raise AssertionError(f"{document!r} raised {exc!r}") from exc
        assert response.status_code < 500, (document, response.status_code, response.text)
        body = response.json()
        for error in body.get("errors") or ():
            assert error["message"] != "Internal error.", (document, body)
            assert isinstance((error.get("extensions") or {}).get("code"), str), (document, error)

    async def check_subscription(self, document: str) -> None:
        """A subscription as the WebSocket runs it: its first message, then it is closed."""
        self.sent += 1
        context = Context(
            self.view.services, principal=self.principal, transport="websocket", bearer=self.token
        )
        try:
            result = await api_schema.subscribe(document, context_value=context)
            if isinstance(result, ExecutionResult):
                errors = result.errors or []
            else:
                try:
                    first = await asyncio.wait_for(anext(result), 10)
                finally:
                    await result.aclose()
                errors = first.errors or []
        except BaseException as exc:
            raise AssertionError(f"{document!r} raised {exc!r}") from exc
        for error in errors:
            formatted = error.formatted
            assert formatted["message"] != "Internal error.", (document, formatted)
            assert isinstance((formatted.get("extensions") or {}).get("code"), str), (
                document,
                formatted,
            )

    async def close(self) -> None:
        await self.client.aclose()
        await self.runtime.stop()
        await self.app.close()


def scalars(ids: list[str]) -> dict[str, st.SearchStrategy[graphql.ValueNode]]:
    moments = st.one_of(
        st.datetimes(
            min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.just(UTC)
        ).map(lambda d: d.isoformat()),
        st.datetimes().map(lambda d: d.isoformat()),  # no timezone
        st.text(max_size=30),
    )
    json_values = st.recursive(
        st.one_of(
            st.none().map(lambda _: graphql.NullValueNode()),
            st.booleans().map(nodes.Boolean),
            st.integers().map(nodes.Int),
            st.floats(allow_nan=False, allow_infinity=False).map(nodes.Float),
            st.text(max_size=20).map(nodes.String),
        ),
        lambda inner: st.one_of(
            st.lists(inner, max_size=4).map(nodes.List),
            st.dictionaries(st.sampled_from(["simulation", "runtime_seconds", "outcome", "image",
                                             "command", "env", "a", "b"]), inner, max_size=4)
            .map(lambda d: nodes.Object([
                graphql.ObjectFieldNode(name=graphql.NameNode(value=k), value=v)
                for k, v in d.items()
            ])),
        ),
        max_leaves=20,
    )  # fmt: skip
    return {
        "ID": st.one_of(st.sampled_from(ids), st.text(alphabet=string.printable, max_size=40)).map(
            nodes.String
        ),
        "DateTime": moments.map(nodes.String),
        "Date": st.one_of(
            st.dates().map(lambda d: d.isoformat()),
            st.sampled_from(["2026-02-30", "2026-11-27T00:00:00", "", "0000-01-01", "tomorrow"]),
        ).map(nodes.String),
        "Decimal": st.one_of(
            st.decimals(allow_nan=False, allow_infinity=False).map(str),
            st.sampled_from(["1e400", "-0", "NaN", "Infinity", "abc", str(Decimal("1.5"))]),
        ).map(nodes.String),
        "JSON": json_values,
    }


def subscriptions(
    custom: dict[str, st.SearchStrategy[graphql.ValueNode]], mode: Mode = Mode.POSITIVE
) -> st.SearchStrategy[str]:
    """Subscription documents: hypothesis-graphql writes queries, so it is shown a schema whose
    query type is the subscription type, and each document is then sent as a subscription."""
    core = api_schema._schema
    assert core.subscription_type is not None
    as_query = graphql.GraphQLSchema(
        query=core.subscription_type, types=list(core.type_map.values())
    )
    return queries(as_query, custom_scalars=custom, mode=mode).map(
        lambda document: "subscription " + str(document)
    )


def _fuzz(
    check: Callable[[str], Awaitable[None]],
    loop: asyncio.AbstractEventLoop,
    strategy: st.SearchStrategy[Any],
    examples: int = EXAMPLES,
) -> Callable[[], None]:
    @settings(
        max_examples=examples,
        deadline=None,
        derandomize=not os.environ.get("FUZZ_EXPLORE"),
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def run(document: str) -> None:
        loop.run_until_complete(check(document))

    return run


def test_generated_requests_never_meet_a_server_fault(sqlite_url: str) -> None:
    recorder = Recorder()
    root = logging.getLogger()
    root.addHandler(recorder)
    loop = asyncio.new_event_loop()
    harness = loop.run_until_complete(Harness.start(sqlite_url))
    try:
        custom = scalars(harness.ids)
        core = api_schema._schema
        for strategy in (
            queries(core, custom_scalars=custom),
            mutations(core, custom_scalars=custom),
            queries(core, custom_scalars=custom, mode=Mode.NEGATIVE),
            mutations(core, custom_scalars=custom, mode=Mode.NEGATIVE),
        ):
            _fuzz(harness.check, loop, strategy)()
        for mode in (Mode.POSITIVE, Mode.NEGATIVE):
            _fuzz(harness.check_subscription, loop, subscriptions(custom, mode), EXAMPLES // 5)()
    finally:
        loop.run_until_complete(harness.close())
        loop.close()
        root.removeHandler(recorder)
    assert harness.sent >= 4 * EXAMPLES + 2 * (EXAMPLES // 5)
    faults = [f"{r.name}: {r.getMessage()}" for r in recorder.faults]
    assert faults == [], faults[:10]
