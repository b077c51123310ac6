"""What an operation pays and passes before it is validated, in-process over HTTP (ASGI).

Covers: a document that would keep validation busy (one name selected hundreds of times, with or
without aliases, or a chain of fragments doubling at each link) is refused with
FIELD_LIMIT_EXCEEDED before graphql-core sees it, with or without a token; what is refused is
paid for (the whole budget), from the client address's bucket without a token, so a loop of them
is soon RATE_LIMITED, and then refused before its next document is even parsed; another address
has a bucket of its own; a document that does not parse is paid for too; a long text pays a
point per KiB; two tokens of one tenant share their tenant's bucket beside their own;
introspection is bounded in depth (GraphiQL's query passes), and needs a token where anonymous
introspection is off; an answer over the size limit is RESPONSE_TOO_LARGE, over HTTP and as a
WebSocket `next`; a page of samples over its maximum is refused naming `first`.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
from graphql import ExecutionResult, get_introspection_query

from adapters.clock import ManualClock
from domain.model.ids import ClusterId, TenantId
from domain.model.principal import Scope
from domain.ports.unit_of_work import TenantScope
from schema.context import Context
from schema.schema import schema
from tests.integration.test_request_limits import assert_json_error, serving
from tests.integration.test_serving_repositories import SAMPLES, benchmark_on

SMALL = {"operation_budget": 100, "rate_burst": 100, "rate_points_per_minute": 60}
REPEATED = "{ clusters { " + "id " * 900 + "nonexistent } }"
DOUBLING = (
    "{ ...F0 } "
    + " ".join(f"fragment F{i} on Query {{ ...F{i + 1} ...F{i + 1} }}" for i in range(30))
    + " fragment F30 on Query { __typename }"
)


async def post(client: httpx.AsyncClient, query: str, token: str | None = None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return await client.post("/graphql", json={"query": query}, headers=headers)


def refusal(response: httpx.Response) -> dict[str, Any]:
    [error] = response.json()["errors"]
    assert response.json().get("data") is None
    return dict(error["extensions"])


async def test_what_would_keep_validation_busy_is_refused_before_it(sqlite_url: str) -> None:
    """Found from outside: 11 KB of one selection repeated kept validation busy for 4-5 s,
    uncharged, without a token."""
    async with serving(sqlite_url) as api:
        token = await api.token()
        for caller in (None, token):
            repeated = refusal(await post(api.client, REPEATED, caller))  # not a field error:
            assert repeated == {"code": "FIELD_LIMIT_EXCEEDED", "limit": 10, "of": "repeats"}
            doubled = refusal(await post(api.client, DOUBLING, caller))
            assert doubled == {"code": "FIELD_LIMIT_EXCEEDED", "limit": 1000, "of": "selections"}
        typenames = await post(api.client, "{ " + "__typename " * 900 + "}")
        assert refusal(typenames)["code"] == "FIELD_LIMIT_EXCEEDED"
        aliased = "{ " + "a: clusters { id } " * 15 + "}"
        assert refusal(await post(api.client, aliased, token))["of"] == "repeats"
        fine = await post(api.client, "{ clusters { id id name } }", token)
        assert fine.status_code == 200 and "errors" not in fine.json()


async def test_refusals_are_paid_for_by_the_callers_address(sqlite_url: str) -> None:
    clock = ManualClock()
    limits = serving(sqlite_url, clock=clock, **SMALL)
    async with limits as api:
        first = refusal(await post(api.client, REPEATED))
        assert first["code"] == "FIELD_LIMIT_EXCEEDED"  # and the whole budget paid for it
        again = await post(api.client, REPEATED)
        assert "100 s" in assert_json_error(again, 429, "RATE_LIMITED")
        assert again.headers["Retry-After"] == "100"
        unparsed = await post(api.client, "{ clusters { id ")
        assert_json_error(unparsed, 429, "RATE_LIMITED")  # refused before it was parsed
        elsewhere = limits.client_at("198.51.100.7")
        assert refusal(await post(elsewhere, REPEATED))["code"] == "FIELD_LIMIT_EXCEEDED"
        token = await api.token(Scope.CLUSTERS_READ)  # a token pays from its own bucket
        assert (await post(api.client, "{ clusters { id } }", token)).status_code == 200
        await clock.advance(100)
        assert (await post(api.client, "{ __typename }")).status_code == 200


async def test_documents_that_do_not_parse_and_long_texts_are_paid_for(sqlite_url: str) -> None:
    clock = ManualClock()
    async with serving(sqlite_url, clock=clock, **SMALL) as api:
        many = "{ " + "__typename " * 4001 + "}"
        assert refusal(await post(api.client, many))["code"] == "TOKEN_LIMIT_EXCEEDED"
        assert_json_error(await post(api.client, "{ __typename }"), 429, "RATE_LIMITED")
        await clock.advance(100)
        for _ in range(9):  # 10 points each
            assert refusal(await post(api.client, "{ "))["code"] == "GRAPHQL_PARSE_FAILED"
        assert (await post(api.client, "{ __typename }")).status_code == 200
        assert_json_error(await post(api.client, "{ __typename }"), 429, "RATE_LIMITED")
    async with serving(sqlite_url) as api:
        long = "# " + "x" * 20 * 1024 + "\n{ __typename }"
        answer = (await post(api.client, long, await api.token())).json()
        assert answer["extensions"]["cost"]["requested"] == 10 + 20


async def test_a_tenants_tokens_share_its_bucket_besides_their_own(sqlite_url: str) -> None:
    clock = ManualClock()
    tenant_limits = {"tenant_rate_burst": 150, "tenant_rate_points_per_minute": 60}
    async with serving(sqlite_url, clock=clock, **SMALL, **tenant_limits) as api:
        tenant = TenantId(uuid.uuid4())
        one, two = [await api.token(Scope.CLUSTERS_READ, tenant=tenant) for _ in range(2)]
        other = await api.token(Scope.CLUSTERS_READ)
        query = "{ clusters { id } }"  # 20 points
        answers = [await post(api.client, query, one) for _ in range(6)]
        assert [a.status_code for a in answers] == [200] * 5 + [429]  # its own bucket: 100
        answers = [await post(api.client, query, two) for _ in range(3)]
        assert [a.status_code for a in answers] == [200, 200, 429]  # the tenant's: 150
        assert answers[-1].headers["Retry-After"] == "10"
        assert (await post(api.client, query, other)).status_code == 200


INTROSPECTION_20_DEEP = (
    "{ __schema { types { fields { type " + "{ ofType " * 16 + "{ name }" + " }" * 16 + " } } } }"
)


async def test_introspection_is_bounded_and_anonymous_only_where_allowed(sqlite_url: str) -> None:
    """Found from outside: a 20-level `__schema { types { fields { type { ofType ...` query
    was answered."""
    async with serving(sqlite_url) as api:
        deep = refusal(await post(api.client, INTROSPECTION_20_DEEP, await api.token()))
        assert deep == {"code": "DEPTH_LIMIT_EXCEEDED", "limit": 15}
        anonymous = await post(api.client, "{ __schema { queryType { name } } }")
        assert anonymous.status_code == 200  # embedded: allowed by default
    async with serving(sqlite_url, anonymous_introspection=False) as api:
        anonymous = await post(api.client, "{ __schema { queryType { name } } }")
        assert_json_error(anonymous, 401, "UNAUTHENTICATED")
        named = await post(api.client, "{ __schema { queryType { name } } }", await api.token())
        assert named.json()["data"]["__schema"]["queryType"]["name"] == "Query"


async def test_an_answer_over_the_size_limit_is_a_typed_error(sqlite_url: str) -> None:
    """Found from outside: 20 aliases of `samples(first: 10000)` returned 32 MB."""
    limited = serving(sqlite_url, max_response_bytes=64 * 1024)
    async with limited as api:
        token = await api.token()
        body = (await post(api.client, get_introspection_query(), token)).json()  # 200 KB
        assert body == {
            "errors": [
                {
                    "message": body["errors"][0]["message"],
                    "extensions": {"code": "RESPONSE_TOO_LARGE", "limit": 65536},
                }
            ]
        }
        small = await post(api.client, "{ __typename }", token)
        assert small.json()["data"] == {"__typename": "Query"}
        view = limited.asgi.state.view
        big = {"id": "7", "type": "next", "payload": {"data": {"x": "y" * 70_000}}}
        message = json.loads(view.encode_json(big))
        assert message["id"] == "7" and message["type"] == "next"
        assert message["payload"]["errors"][0]["extensions"]["code"] == "RESPONSE_TOO_LARGE"
        fits = {"id": "8", "type": "next", "payload": {"data": {"x": "y"}}}
        assert json.loads(view.encode_json(fits)) == fits


async def test_a_page_of_samples_beyond_its_maximum_is_refused(sqlite_url: str) -> None:
    async with serving(sqlite_url) as api:
        tenant = TenantId(uuid.uuid4())
        token = await api.token(Scope.JOBS_READ, tenant=tenant)
        benchmark = benchmark_on(ClusterId(uuid.UUID(api.cluster_id)), tenant)
        async with api.app.db.unit_of_work(TenantScope.system()) as uow:
            await uow.benchmarks.add(benchmark)
            await uow.benchmarks.save_samples(benchmark.id, SAMPLES)
            await uow.commit()
        page = '{ benchmark(id: "%s") { samples(first: %d) { index } } }'
        served = await api.ok(page % (benchmark.id, 1000), token=token)
        assert [s["index"] for s in served["benchmark"]["samples"]] == [s.index for s in SAMPLES]
        refused = (await post(api.client, page % (benchmark.id, 1001), token)).json()
        [error] = refused["errors"]
        assert error["extensions"] == {"code": "BAD_USER_INPUT", "field": "first"}
        assert "1000" in error["message"]


async def test_a_caller_told_to_wait_is_refused_unread_on_every_transport(
    sqlite_url: str,
) -> None:
    """A subscription (which allows no query) refused before parsing is RATE_LIMITED too."""
    limited = serving(sqlite_url)
    async with limited as api:
        token = await api.token()
        view = limited.asgi.state.view
        context = Context(
            view.services,
            principal=await api.app.tokens.authenticate(token),
            transport="websocket",
            bearer=token,
        )
        assert view.services.limits.waiting is not None
        view.services.limits.waiting.tell(context.rate_key(), 30)
        stream = await schema.subscribe(
            f'subscription {{ clusterUpdates(clusterId: "{api.cluster_id}") {{ __typename }} }}',
            context_value=context,
        )
        first = stream if isinstance(stream, ExecutionResult) else await anext(stream)
        [error] = first.errors or []
        assert error.extensions == {"code": "RATE_LIMITED", "retryAfter": 30}
        refused = await post(api.client, "{ clusters { id ", token)  # would not parse
        assert refusal(refused) == {"code": "RATE_LIMITED", "retryAfter": 30}
