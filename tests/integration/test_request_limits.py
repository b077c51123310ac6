"""What an outside probe sent, and the answer each now has, in-process over HTTP (ASGI).

Covers: a body over the limit is refused with 413 before it is read (declared or streamed);
bodies that are not a GraphQL request (null, a number, invalid UTF-8, deep nesting, a lone
surrogate) are 400s in JSON, as are unknown paths and methods; every GraphQL error carries
`extensions.code` (parse, validation, depth, aliases, tokens, variables, masked faults); the
standard introspection query (GraphiQL's, gql's) answers without an error; an operation over the
cost budget is refused with its cost, and every answer says what it cost; a token that spends
faster than its rate gets RATE_LIMITED with HTTP 429 and Retry-After, without touching another
token's bucket, and is served again once its bucket refills on the clock; an internal error is
logged by operation name and document hash, never with the query's literals.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from graphql import get_introspection_query

from adapters.clock import ManualClock
from budcluster import bootstrap, migrate
from budcluster.http import create_app
from budcluster.settings import Settings
from domain.model.principal import Scope
from tests.integration.conftest import empty
from tests.integration.test_app_flows import sim_cluster
from tests.integration.test_graphql_api import Api

HEAVY = (
    "{ "
    + " ".join(
        f"a{i}: jobs(first: 100) {{ edges {{ node {{ id cluster {{ "
        'schedule(from: "2026-01-01T00:00:00Z", to: "2026-01-31T00:00:00Z") { sequence } } } } }'
        for i in range(20)
    )
    + " }"
)


@pytest.fixture
async def api(sqlite_url: str) -> AsyncIterator[Api]:
    async with serving(sqlite_url) as made:
        yield made


class serving:
    """An app on `url` with its settings changed, served in-process over HTTP."""

    def __init__(self, url: str, clock: ManualClock | None = None, **settings: Any) -> None:
        self.url, self.clock, self.settings = url, clock, settings

    async def __aenter__(self) -> Api:
        self.app = await bootstrap.api(
            Settings(database_url=self.url, token_pepper=b"p" * 32, **self.settings),
            clock=self.clock,
        )
        await migrate.upgrade(self.app.db.engine)
        await empty(self.app.db)
        cluster = await sim_cluster(self.app)
        self.asgi = create_app(self.app, manage_lifecycle=False)
        self.client = self.client_at("127.0.0.1")
        self.clients = [self.client]
        return Api(self.app, self.client, str(cluster.id))

    def client_at(self, address: str) -> httpx.AsyncClient:
        """Another client of the same app, from `address`."""
        transport = httpx.ASGITransport(app=self.asgi, client=(address, 50000))
        client = httpx.AsyncClient(transport=transport, base_url="http://test")
        if hasattr(self, "clients"):
            self.clients.append(client)
        return client

    async def __aexit__(self, *_: object) -> None:
        for client in self.clients:
            await client.aclose()
        await self.app.close()


def assert_json_error(response: httpx.Response, status: int, code: str) -> str:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json"), response.headers
    [error] = response.json()["errors"]
    assert error["extensions"]["code"] == code, error
    assert "Traceback" not in response.text
    return str(error["message"])


# --- the transport ----------------------------------------------------------------------------


async def test_a_body_over_the_limit_is_refused_before_it_is_read(sqlite_url: str) -> None:
    """Found from outside: 20-200 MB bodies were read and parsed, stalling everyone."""
    async with serving(sqlite_url, max_body_bytes=64 * 1024) as api:
        declared = await api.client.post(
            "/graphql",
            content=b"x" * (64 * 1024 + 1),
            headers={"content-type": "application/json"},
        )
        assert "larger than 65536 bytes" in assert_json_error(declared, 413, "PAYLOAD_TOO_LARGE")

        sent: list[int] = []

        async def chunks() -> AsyncIterator[bytes]:
            for i in range(1000):  # 16 MB if all of it were read
                sent.append(i)
                yield b"x" * 16 * 1024

        streamed = await api.client.post(
            "/graphql", content=chunks(), headers={"content-type": "application/json"}
        )
        assert_json_error(streamed, 413, "PAYLOAD_TOO_LARGE")
        assert len(sent) <= 6  # stopped at the limit, not read to the end

        small = await api.call("{ __typename }")
        assert small.status_code == 200 and small.json()["data"] == {"__typename": "Query"}


NOT_REQUESTS = [
    (b"null", "a JSON object"),
    (b"123", "a JSON object"),
    (b'"query"', "a JSON object"),
    (b"\xff\xfe{}", "not valid UTF-8"),
    (b"[" * 100_000 + b"]" * 100_000, "nested deeper than 64"),
    (b'{"query": "{ __typename }", "variables": {"a": "\\ud800"}}', "variables.a"),
    (b'{"query": "{ __typename }", "variables": {"\\udfff": 1}}', "lone UTF-16 surrogate"),
    (b"{", "Unable to parse"),
]


@pytest.mark.parametrize(("body", "said"), NOT_REQUESTS, ids=[s for _, s in NOT_REQUESTS])
async def test_a_body_that_is_no_request_is_a_400_in_json(api: Api, body: bytes, said: str) -> None:
    """Found from outside: null, 123, invalid UTF-8 and deep nesting answered HTTP 500."""
    response = await api.client.post(
        "/graphql", content=body, headers={"content-type": "application/json"}
    )
    assert said in assert_json_error(response, 400, "BAD_REQUEST")


async def test_refusals_of_the_transport_are_json(api: Api) -> None:
    assert_json_error(await api.client.get("/nowhere"), 404, "NOT_FOUND")
    assert_json_error(await api.client.put("/graphql", content=b"{}"), 405, "METHOD_NOT_ALLOWED")
    other_type = await api.client.post(
        "/graphql", content=b"query", headers={"content-type": "text/plain"}
    )
    assert_json_error(other_type, 400, "BAD_REQUEST")
    batch = await api.client.post("/graphql", json=[{"query": "{ __typename }"}])
    assert_json_error(batch, 400, "BAD_REQUEST")


# --- GraphQL errors -----------------------------------------------------------------------------


@pytest.fixture
def limits(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    import schema.admission
    import schema.extensions

    monkeypatch.setattr(schema.admission, "MAX_DEPTH", 3)
    monkeypatch.setattr(schema.extensions, "MAX_TOKENS", 100)
    yield


ERRORS = [
    ("{ clusters { id ", None, "GRAPHQL_PARSE_FAILED"),
    ("{ clusters { id nonexistent } }", None, "GRAPHQL_VALIDATION_FAILED"),
    ("{ jobs { edges { node { cluster { nodes { name } } } } } }", None, "DEPTH_LIMIT_EXCEEDED"),
    (
        "{ " + " ".join(f"a{i}: __typename" for i in range(21)) + " }",
        None,
        "ALIAS_LIMIT_EXCEEDED",
    ),
    ("{ " + " ".join("__typename" for _ in range(101)) + " }", None, "TOKEN_LIMIT_EXCEEDED"),
    ("query($n: Int!) { jobs(first: $n) { edges { cursor } } }", {"n": "x"}, "BAD_USER_INPUT"),
    ("query($n: Int!) { jobs(first: $n) { edges { cursor } } }", {}, "BAD_USER_INPUT"),
]


@pytest.mark.usefixtures("limits")
@pytest.mark.parametrize(("query", "variables", "code"), ERRORS, ids=[c for *_, c in ERRORS])
async def test_every_error_carries_a_code(
    api: Api, query: str, variables: dict[str, Any] | None, code: str
) -> None:
    """Found from outside: syntax, depth and alias errors had no extensions.code."""
    body = (await api.call(query, variables, token=await api.token())).json()
    assert body["errors"], body
    assert [e["extensions"]["code"] for e in body["errors"]] == [code] * len(body["errors"])


async def test_a_masked_fault_has_a_code_and_is_logged_without_the_query_text(
    api: Api, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Found from outside: an internal error logged the query text, and with it an inline
    kubeconfig's credentials."""

    async def broken(*_: object, **__: object) -> None:
        raise RuntimeError("the store is down")

    monkeypatch.setattr(api.app.registry, "register", broken)
    secret = "token: kubeconfig-secret-" + uuid.uuid4().hex
    query = (
        'mutation Register { registerCluster(input: {name: "x", platform: ON_PREM, '
        f'kubeconfig: "{secret}"}}) {{ __typename }} }}'
    )
    with caplog.at_level(logging.DEBUG):
        body = (await api.call(query, token=await api.token())).json()
    assert body["errors"][0]["message"] == "Internal error."
    assert body["errors"][0]["extensions"] == {"code": "INTERNAL_SERVER_ERROR"}
    logged = "\n".join(r.getMessage() + str(r.exc_info) for r in caplog.records)
    assert "internal error in operation Register (document sha256:" in logged
    assert "kubeconfig-secret" not in logged and "kubeconfig-secret" not in caplog.text


async def test_standard_introspection_answers_without_errors(api: Api) -> None:
    """Found from outside: GraphiQL's and gql's introspection hit "Internal error." on the
    default value of SubmitJobInput.spec, with a traceback logged each time."""
    query = get_introspection_query(
        descriptions=True,
        specified_by_url=True,
        directive_is_repeatable=True,
        schema_description=True,
        input_value_deprecation=True,
    )
    for token in (None, await api.token()):
        body = (await api.call(query, token=token)).json()
        assert "errors" not in body, body["errors"]
        assert body["data"]["__schema"]["queryType"]["name"] == "Query"


# --- cost and rate ----------------------------------------------------------------------------


async def test_an_operation_over_the_budget_is_refused_with_its_cost(api: Api) -> None:
    """Found from outside: 20 aliases of jobs(first: 100) { cluster { schedule(31 days) } }
    passed the depth and alias limits, took 15 s and returned 3.6 MB."""
    token = await api.token()
    refused = (await api.call(HEAVY, token=token)).json()
    [error] = refused["errors"]
    assert error["extensions"]["code"] == "COST_LIMIT_EXCEEDED"
    assert error["extensions"]["cost"] > error["extensions"]["budget"] == 10_000
    assert refused.get("data") is None
    cheap = (await api.call("{ clusters { id name } }", token=token)).json()
    assert cheap["extensions"]["cost"] == {"requested": 20, "budget": 10_000}  # 10 clusters
    page = "{ jobs(first: 100) { edges { node { id cluster { name } } } } }"
    costs = (await api.call(page, token=token)).json()["extensions"]["cost"]["requested"]
    assert costs == 10 + 1 + 100 * 3  # the connection, then an edge, a node and its cluster each


async def test_a_token_spending_too_fast_is_told_when_to_come_back(sqlite_url: str) -> None:
    clock = ManualClock()
    async with serving(
        sqlite_url,
        clock=clock,
        operation_budget=100,
        rate_burst=100,
        rate_points_per_minute=60,
    ) as api:
        hasty = await api.token(Scope.CLUSTERS_READ)
        calm = await api.token(Scope.CLUSTERS_READ)
        query = "{ clusters { id } }"  # 20 points: 10 and one for each cluster expected
        answers = [await api.call(query, token=hasty) for _ in range(7)]
        assert [a.status_code for a in answers] == [200] * 5 + [429] * 2
        for last in answers[-2:]:
            message = assert_json_error(last, 429, "RATE_LIMITED")
            assert last.headers["Retry-After"] == "20" and "20 s" in message  # 20 short, 1/s
        assert (await api.call(query, token=calm)).status_code == 200  # a bucket of its own
        await clock.advance(20)
        assert (await api.call(query, token=hasty)).status_code == 200
        # An operation over the budget is refused, and charged the whole budget for it.
        await clock.advance(100)
        over = "{ jobs(first: 100) { edges { node { id } } } }"  # 211 points
        refused = (await api.call(over, token=hasty)).json()["errors"][0]["extensions"]["code"]
        assert refused == "COST_LIMIT_EXCEEDED"
        assert (await api.call(query, token=hasty)).status_code == 429


async def test_the_cost_walk_counts_fragments_and_variables(api: Api) -> None:
    token = await api.token()
    query = """
      query($n: Int) { jobs(first: $n) { ...page } }
      fragment page on JobConnection { edges { node { ... on Job { id cluster { name } } } } }
    """
    body = (await api.call(query, {"n": 7}, token=token)).json()
    assert body["extensions"]["cost"]["requested"] == 10 + 1 + 7 * 3
    body = (await api.call(query, {"n": 5000}, token=token)).json()
    assert json.dumps(body["errors"]).count("first") >= 1  # refused by the page limit itself
