"""A tenant's open subscriptions are capped per API process (BUDCLUSTER_TENANT_SUBSCRIPTIONS),
on a running service over graphql-transport-ws: one over the cap is refused with
SUBSCRIPTION_LIMIT_EXCEEDED and the socket stays open, another tenant subscribes as before, and a
stream that completes gives its place back.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.conftest import Service, ServiceFactory, embedded_env, printed_tokens
from tests.e2e.test_outside_probes import SUBSCRIBE_TIMELINE, Socket, cluster_of, tenant_token

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("no_tracebacks")]


@pytest.fixture(scope="module")
async def capped(services: ServiceFactory, tmp_path_factory: pytest.TempPathFactory) -> Service:
    env = embedded_env(tmp_path_factory.mktemp("capped"), BUDCLUSTER_TENANT_SUBSCRIPTIONS="2")
    service = await services.start("capped", env)
    [service.admin_token] = printed_tokens(service.stdout())
    return service


def code_of(answer: dict[str, Any]) -> str | None:
    payload = answer["payload"]
    errors = payload if isinstance(payload, list) else payload.get("errors")
    return str(errors[0]["extensions"]["code"]) if errors else None


async def test_one_subscription_over_the_cap_is_refused_and_a_completed_one_frees_a_place(
    capped: Service,
) -> None:
    token, _ = await tenant_token(capped)
    others, _ = await tenant_token(capped)
    cluster = await cluster_of(capped, token)
    variables = {"clusterId": cluster}
    first, second = await Socket.open(capped, token), await Socket.open(capped, token)
    stranger = await Socket.open(capped, others)
    try:
        held = [await first.send(SUBSCRIBE_TIMELINE, variables) for _ in range(2)]
        for op in held:
            assert code_of(await first.answer(op)) is None  # a snapshot
        refused = await second.answer(await second.send(SUBSCRIBE_TIMELINE, variables))
        assert code_of(refused) == "SUBSCRIPTION_LIMIT_EXCEEDED", refused
        still = await second.answer(await second.send("{ clusters { id } }"))
        assert code_of(still) is None and still["payload"]["data"]["clusters"], still  # open
        theirs = await stranger.answer(await stranger.send(SUBSCRIBE_TIMELINE, variables))
        assert code_of(theirs) is None, theirs

        await first.ws.send(json.dumps({"id": held[0], "type": "complete"}))
        for _ in range(50):  # the server lets go of the completed stream
            again = await second.answer(await second.send(SUBSCRIBE_TIMELINE, variables))
            if code_of(again) is None:
                break
            await second.ws.send(json.dumps({"id": str(second.next_id), "type": "complete"}))
        assert code_of(again) is None, again
    finally:
        for socket_ in (first, second, stranger):
            await socket_.ws.close()
