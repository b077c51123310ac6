"""What outside probes of the running service found, each as it must now behave.

Covers: a token revoked while its WebSocket is open stops working for the next operation on that
socket at once, and every socket of it is closed (4403) within seconds, streams included; the
token commands never create a database (run elsewhere, they say which database they looked for),
need a tenant said out loud, give a tenant's token least privilege and operator scopes only with
--operator, and print the database and tenant they used; `serve` on a port in use fails before
it prints a token; a client that sends its headers too slowly is cut off with 408; the
schedule stream needs clusters:read; WebSocket connection attempts are paid for from the client
address's bucket (closed with 1013 once it is empty) and a refused token is recorded in the
audit trail; and an answer over the size limit is a RESPONSE_TOO_LARGE `next`.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import time
from pathlib import Path
from typing import Any

import pytest
import websockets
from graphql import get_introspection_query
from websockets.exceptions import ConnectionClosed
from websockets.typing import Subprotocol

from tests.e2e.conftest import (
    JOB_UPDATES,
    Service,
    ServiceFactory,
    embedded_env,
    post_graphql,
    printed_tokens,
    run_cli,
)

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("no_tracebacks")]

TOKEN_ID = re.compile(r"token id:\s*([0-9a-f-]{36})")
SUBSCRIBE_TIMELINE = """
subscription($clusterId: ID!) { scheduleTimeline(clusterId: $clusterId) {
  __typename ... on Schedule { sequence } } }
"""


async def tenant_token(service: Service, *args: str) -> tuple[str, str]:
    issued = await run_cli(service.env, "token", "create", "--name", "probe", "--new-tenant", *args)
    token_id = TOKEN_ID.search(issued.stderr)
    assert token_id is not None, issued.stderr
    return printed_tokens(issued.stdout)[0], token_id.group(1)


class Socket:
    """A raw graphql-transport-ws connection, acknowledged."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.next_id = 0

    @classmethod
    async def open(cls, service: Service, token: str) -> Socket:
        ws = await websockets.connect(
            service.ws_url, subprotocols=[Subprotocol("graphql-transport-ws")], open_timeout=10
        )
        await ws.send(
            json.dumps({"type": "connection_init", "payload": {"Authorization": f"Bearer {token}"}})
        )
        ack = json.loads(await asyncio.wait_for(ws.recv(), 10))
        assert ack["type"] == "connection_ack", ack
        return cls(ws)

    async def send(self, query: str, variables: dict[str, Any] | None = None) -> str:
        self.next_id += 1
        op = str(self.next_id)
        payload = {"query": query, "variables": variables or {}}
        await self.ws.send(json.dumps({"id": op, "type": "subscribe", "payload": payload}))
        return op

    async def answer(self, op: str, timeout: float = 10) -> dict[str, Any]:
        while True:
            message = json.loads(await asyncio.wait_for(self.ws.recv(), timeout))
            if message.get("id") == op and message["type"] in ("next", "error"):
                return dict(message)

    async def closed_within(self, seconds: float) -> int | None:
        """Read until the server closes the socket; its close code."""
        try:
            async with asyncio.timeout(seconds):
                while True:
                    await self.ws.recv()
        except ConnectionClosed:
            return int(self.ws.close_code) if self.ws.close_code is not None else None
        except TimeoutError:
            return None


@pytest.fixture(scope="module")
async def slow_checks(
    services: ServiceFactory, tmp_path_factory: pytest.TempPathFactory
) -> Service:
    """A service that checks open sockets' tokens only once an hour: what stops a revoked token
    there is the check of each operation."""
    env = embedded_env(
        tmp_path_factory.mktemp("slow-checks"), BUDCLUSTER_TOKEN_CHECK_SECONDS="3600"
    )
    service = await services.start("slow-checks", env)
    [service.admin_token] = printed_tokens(service.stdout())
    return service


async def cluster_of(service: Service, token: str) -> str:
    socket_ = await Socket.open(service, token)
    try:
        answer = await socket_.answer(await socket_.send("{ clusters { id name } }"))
    finally:
        await socket_.ws.close()
    [found] = [c["id"] for c in answer["payload"]["data"]["clusters"] if c["name"] == "local-sim"]
    return str(found)


async def test_a_revoked_token_stops_at_the_next_operation_on_its_socket(
    slow_checks: Service,
) -> None:
    """Found from outside: submitJob on a socket opened before `token revoke` still succeeded
    126 s later."""
    token, token_id = await tenant_token(slow_checks)
    open_socket = await Socket.open(slow_checks, token)
    try:
        before = await open_socket.answer(await open_socket.send("{ clusters { id } }"))
        assert before["type"] == "next" and before["payload"]["data"]["clusters"], before
        await run_cli(slow_checks.env, "token", "revoke", token_id)
        after = await open_socket.answer(await open_socket.send("{ clusters { id } }"))
        errors = after["payload"] if after["type"] == "error" else after["payload"]["errors"]
        assert [e["extensions"]["code"] for e in errors] == ["UNAUTHENTICATED"], after
        assert "data" not in after["payload"] or not after["payload"]["data"], after
    finally:
        await open_socket.ws.close()


async def test_every_socket_of_a_revoked_token_closes_within_seconds(embedded: Service) -> None:
    """Found from outside: live changes kept streaming to a revoked token's socket."""
    token, token_id = await tenant_token(embedded)
    cluster_id = await cluster_of(embedded, token)
    streaming = await Socket.open(embedded, token)
    idle = await Socket.open(embedded, token)
    bystander_token, _ = await tenant_token(embedded)
    bystander = await Socket.open(embedded, bystander_token)
    try:
        op = await streaming.send(JOB_UPDATES, {"clusterId": cluster_id})
        snapshot = await streaming.answer(op)
        assert snapshot["payload"]["data"]["jobUpdates"]["__typename"] == "JobSnapshot"
        await run_cli(embedded.env, "token", "revoke", token_id)
        started = time.monotonic()
        codes = await asyncio.gather(streaming.closed_within(15), idle.closed_within(15))
        assert list(codes) == [4403, 4403], codes
        assert time.monotonic() - started < 10
        still = await bystander.answer(await bystander.send("{ clusters { id } }"))
        assert still["type"] == "next" and still["payload"]["data"]["clusters"]
    finally:
        for s in (streaming, idle, bystander):
            await s.ws.close()


async def test_the_schedule_stream_needs_clusters_read(embedded: Service) -> None:
    """Found from outside: scheduleTimeline was served to a token without clusters:read."""
    token, _ = await tenant_token(embedded, "--scope", "jobs:read")
    admin = embedded.admin_token
    assert admin is not None
    cluster_id = await cluster_of(embedded, admin)
    only_jobs = await Socket.open(embedded, token)
    try:
        answer = await only_jobs.answer(
            await only_jobs.send(SUBSCRIBE_TIMELINE, {"clusterId": cluster_id})
        )
        errors = answer["payload"] if answer["type"] == "error" else answer["payload"]["errors"]
        assert [e["extensions"]["code"] for e in errors] == ["FORBIDDEN"], answer
        assert "clusters:read" in errors[0]["message"]
    finally:
        await only_jobs.ws.close()


MALFORMED_MESSAGES = [
    ({"type": "subscribe", "id": "1", "payload": "x"}, "`payload` must be an object"),
    ({"type": "subscribe", "id": 1, "payload": {"query": "{ __typename }"}}, "`id` must be"),
    ({"type": "subscribe", "id": "1", "payload": {"query": 5}}, "`payload` must be an object"),
    (
        {"type": "subscribe", "id": "1", "payload": {"query": "{ __typename }", "variables": 1}},
        "`payload.variables` has the wrong type",
    ),
    ({"type": "subscribe", "id": "1", "payload": {"query": "{ jobs {"}}, "Syntax Error"),
    ({"type": 5}, "a message must be an object with a `type`"),
    ([], "a message must be an object with a `type`"),
    (None, "a message must be an object with a `type`"),
]


@pytest.mark.parametrize(("message", "reason"), MALFORMED_MESSAGES)
async def test_a_malformed_socket_message_closes_it_with_4400_and_why(
    embedded: Service, message: object, reason: str
) -> None:
    """Found by probing: such messages made Strawberry's handler fail with a traceback and the
    socket drop without a close code (1006); a syntax error ended in "complete" and a traceback."""
    assert embedded.admin_token is not None
    before = embedded.output(tail=10**9).count("Traceback")
    probe = await Socket.open(embedded, embedded.admin_token)
    await probe.ws.send(json.dumps(message))
    assert await probe.closed_within(10) == 4400
    assert reason in str(probe.ws.close_reason)
    assert embedded.output(tail=10**9).count("Traceback") == before


async def bad_connection_init(service: Service) -> int | None:
    """A connection_init with a token that is no token; the code the socket closes with."""
    ws = await websockets.connect(
        service.ws_url, subprotocols=[Subprotocol("graphql-transport-ws")], open_timeout=10
    )
    await ws.send(json.dumps({"type": "connection_init", "payload": {"Authorization": "Bearer x"}}))
    return await Socket(ws).closed_within(10)


async def test_socket_attempts_are_paid_by_address_and_big_answers_refused(
    services: ServiceFactory, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Found from outside: connection attempts with bad tokens were neither limited nor
    recorded, and an answer of any size was sent."""
    env = embedded_env(
        tmp_path_factory.mktemp("tight"),
        BUDCLUSTER_OPERATION_BUDGET="200",
        BUDCLUSTER_RATE_BURST="200",
        BUDCLUSTER_RATE_POINTS_PER_MINUTE="60",
        BUDCLUSTER_MAX_RESPONSE_BYTES="65536",
    )
    service = await services.start("tight", env)
    [admin] = printed_tokens(service.stdout())
    try:
        open_socket = await Socket.open(service, admin)  # 10 points of 127.0.0.1's 200
        answer = await open_socket.answer(await open_socket.send(get_introspection_query()))
        assert answer["type"] == "next", answer
        [error] = answer["payload"]["errors"]
        assert error["extensions"] == {"code": "RESPONSE_TOO_LARGE", "limit": 65536}
        still = await open_socket.answer(await open_socket.send("{ __typename }"))
        assert still["payload"]["data"] == {"__typename": "Query"}
        await open_socket.ws.close()
        codes = [await bad_connection_init(service) for _ in range(21)]
        assert codes == [4403] * 19 + [1013] * 2, codes  # 10 points each, then none left
        recorded = await post_graphql(
            service,
            '{ auditEvents(filter: {actor: "address:127.0.0.1"}) { edges { node { '
            "operation outcome tenantId input } } } }",
            token=admin,
        )
        events = [e["node"] for e in recorded.json()["data"]["auditEvents"]["edges"]]
        assert len(events) == 10  # at most 10 a minute for one address: the first ten
        assert {(e["operation"], e["outcome"]) for e in events} == {
            ("connection_init", "UNAUTHENTICATED")
        }
        assert all(e["tenantId"] is None for e in events)
        assert events[0]["input"] == {"address": "127.0.0.1", "transport": "websocket"}
    finally:
        await service.stop()


# --- the command line ---------------------------------------------------------------------------


async def test_token_commands_never_create_a_database(embedded: Service, tmp_path: Path) -> None:
    """Found from outside: run from another directory, `token create` silently made a fresh
    database (and a new tenant), and printed a token no running service knew."""
    elsewhere = {**embedded.env, "BUDCLUSTER_DATA_DIR": str(tmp_path / "nothing-here")}
    refused = await run_cli(
        elsewhere, "token", "create", "--name", "x", "--new-tenant", check=False
    )
    assert refused.returncode == 2 and printed_tokens(refused.stdout) == []
    assert f"no budcluster database at {tmp_path / 'nothing-here' / 'budcluster.db'}" in (
        refused.stderr
    )
    assert not (tmp_path / "nothing-here" / "budcluster.db").exists()
    revoke = await run_cli(
        elsewhere, "token", "revoke", "00000000-0000-0000-0000-000000000000", check=False
    )
    assert revoke.returncode == 2 and not (tmp_path / "nothing-here" / "budcluster.db").exists()

    unsaid = await run_cli(embedded.env, "token", "create", "--name", "x", check=False)
    assert unsaid.returncode == 2 and "--tenant" in unsaid.stderr
    assert printed_tokens(unsaid.stdout) == []


async def test_a_tenant_token_gets_least_privilege_and_says_what_it_used(
    embedded: Service,
) -> None:
    """Found from outside: `token create` without --scope issued an admin token."""
    issued = await run_cli(embedded.env, "token", "create", "--name", "team", "--new-tenant")
    data_dir = embedded.env["BUDCLUSTER_DATA_DIR"]
    resolved = Path(data_dir).resolve()  # noqa: ASYNC240
    assert f"database: sqlite:///{resolved}/budcluster.db" in issued.stderr
    assert "(new)" in issued.stderr and "kind:     tenant" in issued.stderr
    assert "scopes:   clusters:read, jobs:read, jobs:write" in issued.stderr
    operator_scope = await run_cli(
        embedded.env,
        "token", "create", "--name", "x", "--new-tenant", "--scope", "clusters:write",
        check=False,
    )  # fmt: skip
    assert operator_scope.returncode == 1 and "need an operator token" in operator_scope.stderr
    assert printed_tokens(operator_scope.stdout) == []
    tenant = re.search(r"tenant:\s*([0-9a-f-]{36})", issued.stderr)
    assert tenant is not None
    ops = await run_cli(
        embedded.env, "token", "create", "--name", "ops", "--tenant", tenant.group(1),
        "--operator", "--expires-in", "1h",
    )  # fmt: skip
    assert "kind:     operator" in ops.stderr and "scopes:   admin" in ops.stderr
    assert "(new)" not in ops.stderr and "expires:  20" in ops.stderr


async def test_serve_on_a_port_in_use_fails_before_printing_a_token(
    services: ServiceFactory, tmp_path: Path
) -> None:
    """Found from outside: `./dev serve` on a port in use printed "ready" and a new admin token,
    then failed to bind."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = {**embedded_env(tmp_path / "data"), "BUDCLUSTER_PORT": str(port)}
        result = await run_cli(env, "serve", check=False, timeout=60)
    assert result.returncode == 1, result
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr
    assert "in use" in result.stderr.lower()
    assert printed_tokens(result.stdout) == [] and "ready" not in result.stdout
    assert not (tmp_path / "data" / "budcluster.db").exists()


async def test_headers_sent_too_slowly_are_cut_off(
    services: ServiceFactory, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Found from outside: 300 half-open sockets made the API unavailable."""
    env = embedded_env(tmp_path_factory.mktemp("slow"), BUDCLUSTER_HEADER_TIMEOUT_SECONDS="1")
    service = await services.start("slow-headers", env)
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", service.port)
        writer.write(b"POST /graphql HTTP/1.1\r\nHost: x\r\n")  # and nothing more
        await writer.drain()
        started = time.monotonic()
        answer = await asyncio.wait_for(reader.read(), 10)  # until the server closes
        assert time.monotonic() - started < 5
        assert answer.startswith(b"HTTP/1.1 408"), answer
        assert b'"code": "REQUEST_TIMEOUT"' in answer
        writer.close()
    finally:
        await service.stop()


async def test_serve_refuses_a_persisted_document_setting_it_cannot_use(tmp_path: Path) -> None:
    """Each says why in one line and exits 2 before listening: no traceback, no token."""
    forged = tmp_path / "forged.json"
    forged.write_text('{"' + "0" * 64 + '": "{ clusters { id } }"}')
    cases = {
        "BUDCLUSTER_PERSISTED_DOCUMENTS": ("maybe", "must be off or only"),
        "BUDCLUSTER_PERSISTED_DOCUMENTS_FILE": (str(forged), "is not its document's sha256"),
    }
    for name, (value, said) in cases.items():
        env = embedded_env(tmp_path / name, **{name: value, "BUDCLUSTER_PORT": "1"})
        refused = await run_cli(env, "serve", check=False)
        assert refused.returncode == 2, refused
        assert said in refused.stderr and "Traceback" not in refused.stderr, refused.stderr
        assert printed_tokens(refused.stdout) == []
    missing = embedded_env(
        tmp_path / "missing", BUDCLUSTER_PERSISTED_DOCUMENTS_FILE=str(tmp_path / "nope.json")
    )
    refused = await run_cli(missing, "serve", check=False)
    assert refused.returncode == 2 and "nope.json" in refused.stderr, refused.stderr
