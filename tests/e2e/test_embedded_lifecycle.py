"""The embedded service (SQLite, in-process tasks and events, the local-sim cluster), driven from
outside: first start and restart (each saying where GraphiQL and the live schedule are), the
local GraphiQL, the job update stream and resuming it, authentication on HTTP and WebSocket, and
the typed errors of the API.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import re
import signal
import stat
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets
from gql import GraphQLRequest
from gql.transport.exceptions import TransportQueryError
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.typing import Origin, Subprotocol

from tests.e2e.conftest import (
    A100,
    JOB_UPDATES,
    Service,
    ServiceFactory,
    Subscription,
    assert_stored_or_rejected,
    batch_job,
    cluster_id_named,
    completed,
    embedded_env,
    http_client,
    post_graphql,
    printed_tokens,
    run_cli,
    same_budget,
    statuses_of,
    submit,
    submit_ok,
    subscribed,
    wait_for_status,
    ws_client,
)

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("no_tracebacks")]

LIFECYCLE = ["PENDING", "QUEUED", "ADMITTED", "RUNNING", "COMPLETED"]
UNAUTHENTICATED = "UNAUTHENTICATED"


def admin(service: Service) -> str:
    assert service.admin_token is not None
    return service.admin_token


def cluster(service: Service) -> str:
    assert service.cluster_id is not None
    return service.cluster_id


def key(change: dict[str, Any]) -> tuple[int, str, str, str]:
    return (change["sequence"], change["kind"], change["job"]["id"], change["job"]["status"])


def assert_lifecycle(changes: list[dict[str, Any]], job_id: str, statuses: list[str]) -> None:
    """The job's changes are exactly SUBMITTED then one transition per later status, chained."""
    mine = [c for c in changes if c["job"]["id"] == job_id]
    assert [(c["kind"], c["job"]["status"]) for c in mine] == list(
        zip(["SUBMITTED"] + ["TRANSITION"] * (len(statuses) - 1), statuses, strict=True)
    ), mine
    previous = None
    for change in mine:
        transition = change["transition"]
        assert transition["fromStatus"] == previous, change
        assert transition["toStatus"] == change["job"]["status"], change
        assert transition["attempt"] == change["job"]["attempt"] == 0, change
        assert change["matchesFilter"] is True, change
        previous = transition["toStatus"]


def strictly_increasing(sequences: list[int]) -> bool:
    return all(a < b for a, b in itertools.pairwise(sequences))


# --- (a) first start, restart, GraphiQL ------------------------------------------------------


def assert_private(data_dir: Path) -> None:
    """The data directory (the database, its WAL, the pepper; keys once made) is private."""
    found = [data_dir, *data_dir.rglob("*")]
    assert any(p.name == "budcluster.db" for p in found), found
    assert any(p.name == "budcluster.db-wal" for p in found), found
    exposed = {
        str(p): oct(stat.S_IMODE(p.stat().st_mode)) for p in found if p.stat().st_mode & 0o077
    }
    assert exposed == {}


def assert_says_where_to_open(service: Service, stdout: str) -> None:
    """Every start prints GraphiQL's address and the live schedule's."""
    assert f"GraphiQL:       {service.base}/graphql" in stdout, stdout
    assert f"Live schedule:  {service.base}/schedule" in stdout, stdout


async def test_first_start_prints_token_once_and_restart_keeps_the_cluster(
    services: ServiceFactory, tmp_path_factory: pytest.TempPathFactory
) -> None:
    data_dir = tmp_path_factory.mktemp("restart-data")
    service = await services.start("restart", embedded_env(data_dir))
    first_stdout = service.stdout()
    tokens = printed_tokens(first_stdout)
    assert len(tokens) == 1, service.output()
    token = tokens[0]
    assert len([line for line in first_stdout.splitlines() if token in line]) == 1
    assert_says_where_to_open(service, first_stdout)
    cluster_id = await cluster_id_named(service, token, "local-sim")
    assert_private(data_dir)

    # SIGTERM is a clean shutdown (uvicorn re-raises the signal once it has shut down).
    assert await service.stop() in (0, -signal.SIGTERM), service.output()
    assert "Application shutdown complete" in service.output(), service.output()
    await service.start()
    try:
        assert printed_tokens(service.stdout()) == [], service.output()
        assert "bud_" not in service.stdout(), service.output()
        assert_says_where_to_open(service, service.stdout())
        async with http_client(service, token) as session:  # the first token still works
            result = await session.execute(
                GraphQLRequest("{ clusters { id name platform capacity { gpuType total } } }")
            )
        assert result["clusters"] == [
            {
                "id": cluster_id,
                "name": "local-sim",
                "platform": "SIMULATED",
                "capacity": [
                    {"gpuType": A100, "total": 16},
                    {"gpuType": "nvidia-tesla-t4", "total": 4},
                ],
            }
        ]
    finally:
        await service.stop()


async def test_graphiql_is_served_from_local_assets_only(embedded: Service) -> None:
    async with httpx.AsyncClient(timeout=30.0) as client:
        page = await client.get(embedded.url, headers={"Accept": "text/html"})
        assert page.status_code == 200
        assert page.headers["content-type"].startswith("text/html")
        html = page.text
        assert "graphiql" in html.lower()
        assert re.search(r"https?://", html, re.IGNORECASE) is None, "links to another host"
        assert re.search(r"""(?:src|href)\s*=\s*["']//""", html) is None, "protocol-relative"
        references = re.findall(r"""(?:src|href)\s*=\s*["']([^"']+)["']""", html)
        assets = [r for r in references if not r.startswith("data:")]
        assert assets, html
        assert all(r.startswith("/graphiql/assets/") for r in assets), assets
        assert any(r.endswith(".js") for r in assets) and any(r.endswith(".css") for r in assets)
        for asset in assets:
            response = await client.get(f"{embedded.base}{asset}")
            assert response.status_code == 200, asset
            assert len(response.content) > 1000, asset
        for path in ("/ready", "/readyz"):
            ready = await client.get(f"{embedded.base}{path}")
            assert (ready.status_code, ready.json()) == (
                200,
                {"status": "ready", "checks": {"database": "ok", "migrations": "ok"}},
            )
        health = await client.get(f"{embedded.base}/health")
        assert (health.status_code, health.json()) == (200, {"status": "ok"})


# --- (b) the update stream ---------------------------------------------------------------------


async def test_subscription_streams_each_job_through_its_lifecycle_in_order(
    embedded: Service,
) -> None:
    async with subscribed(embedded, admin(embedded), cluster(embedded)) as sub:
        await sub.wait_for(lambda u: len(u) >= 1)
        snapshot = sub.updates[0]
        assert snapshot["__typename"] == "JobSnapshot", snapshot
        assert snapshot["reason"] == "subscribed"
        assert snapshot["truncated"] is False
        assert isinstance(snapshot["sequence"], int) and snapshot["sequence"] >= 0

        async with http_client(embedded, admin(embedded)) as session:
            four = await submit_ok(session, batch_job(cluster(embedded), gpus=4, runtime=1))
            eight = await submit_ok(session, batch_job(cluster(embedded), gpus=8, runtime=1))
        await sub.wait_for(completed([four["id"], eight["id"]]), timeout=40)

    updates = sub.updates
    assert [u["__typename"] for u in updates].count("JobSnapshot") == 1
    changes = updates[1:]
    assert all(c["__typename"] == "JobChange" for c in changes), changes
    for job in (four, eight):
        assert statuses_of(changes, job["id"]) == LIFECYCLE
        assert_lifecycle(changes, job["id"], LIFECYCLE)
    sequences = [c["sequence"] for c in changes]
    assert strictly_increasing(sequences), sequences
    # The cluster's sequence also numbers its timeline changes, which this stream skips; what
    # it holds comes after the snapshot, in order, once each, and covers every lifecycle.
    assert sequences[0] > snapshot["sequence"], sequences
    assert len({(c["job"]["id"], c["job"]["status"]) for c in changes}) == len(changes)


# --- (c) resuming after a dropped connection ---------------------------------------------------


async def test_resuming_with_since_gives_exactly_what_was_missed(embedded: Service) -> None:
    token, cluster_id = admin(embedded), cluster(embedded)
    async with subscribed(embedded, token, cluster_id) as parallel:
        first = await Subscription(ws_client(embedded, token), {"clusterId": cluster_id}).open()
        try:
            await parallel.wait_for(lambda u: len(u) >= 1)
            await first.wait_for(lambda u: len(u) >= 1)
            assert first.updates[0]["__typename"] == parallel.updates[0]["__typename"]
            assert first.updates[0]["sequence"] == parallel.updates[0]["sequence"]

            async with http_client(embedded, token) as session:
                jobs = [
                    await submit_ok(session, batch_job(cluster_id, gpus=4, runtime=3)),
                    await submit_ok(session, batch_job(cluster_id, gpus=8, runtime=3)),
                ]
            ids = [j["id"] for j in jobs]

            # Drop the connection once the jobs are admitted, well before they complete.
            await first.wait_for(
                lambda u: any(
                    c["__typename"] == "JobChange" and c["job"]["status"] == "ADMITTED" for c in u
                ),
                timeout=30,
            )
        finally:
            await first.close()
        assert first.error is None, first.error
        received = first.changes
        assert received, first.updates
        assert not completed(ids)(first.updates), "the jobs ended before the drop"
        last = received[-1]["sequence"]

        # Something happens while the client is away.
        await parallel.wait_for(lambda u: any(c["sequence"] > last for c in u[1:]), timeout=30)
        async with subscribed(embedded, token, cluster_id, since=last) as resumed:
            await resumed.wait_for(completed(ids), timeout=40)
        await parallel.wait_for(completed(ids), timeout=40)

    assert resumed.error is None, resumed.error
    assert all(u["__typename"] == "JobChange" for u in resumed.updates), resumed.updates
    # the next job change after `last` (the sequence also numbers timeline and quota events,
    # which this stream skips: a gap is not a loss)
    after = [c["sequence"] for c in parallel.changes if c["sequence"] > last]
    assert resumed.updates[0]["sequence"] == after[0], (resumed.updates, after)
    union = [key(c) for c in received] + [key(c) for c in resumed.changes]
    assert len(set(union)) == len(union), union  # nothing twice
    assert [s for s, *_ in union] == sorted({s for s, *_ in union})
    assert union == [key(c) for c in parallel.changes]  # nothing missing, nothing extra
    for job_id in ids:
        assert [status for _, _, j, status in union if j == job_id] == LIFECYCLE


# --- (d) since: 0 and since ahead of the log ---------------------------------------------------


async def test_since_zero_replays_history_and_since_ahead_gets_a_snapshot(
    embedded: Service,
) -> None:
    token, cluster_id = admin(embedded), cluster(embedded)
    async with http_client(embedded, token) as session:
        job = await submit_ok(session, batch_job(cluster_id, gpus=2, runtime=0.5))
        await wait_for_status(session, job["id"], "COMPLETED")

    async with subscribed(embedded, token, cluster_id) as fresh:
        await fresh.wait_for(lambda u: len(u) >= 1)
    current = fresh.updates[0]["sequence"]
    assert fresh.updates[0]["__typename"] == "JobSnapshot"
    assert current >= len(LIFECYCLE)

    async with subscribed(embedded, token, cluster_id, since=0) as replay:
        await replay.wait_for(completed([job["id"]]), timeout=30)
    updates = replay.updates
    assert all(u["__typename"] == "JobChange" for u in updates), updates[:3]
    replayed = [u["sequence"] for u in updates if u["sequence"] <= current]
    assert replayed[0] >= 1 and strictly_increasing(replayed), replayed
    assert updates[0]["kind"] == "SUBMITTED"
    assert_lifecycle(updates, job["id"], LIFECYCLE)

    async with subscribed(embedded, token, cluster_id, since=current + 1000) as ahead:
        await ahead.wait_for(lambda u: len(u) >= 1)
        snapshot = ahead.updates[0]
        assert snapshot["__typename"] == "JobSnapshot", snapshot
        assert snapshot["sequence"] >= current  # timeline changes may have come since
        assert snapshot["reason"] == "unknown-since"
        assert {"id": job["id"], "name": job["name"], "status": "COMPLETED"} in snapshot["jobs"]
        # ... and the stream goes on live from there.
        async with http_client(embedded, token) as session:
            later = await submit_ok(session, batch_job(cluster_id, gpus=1, runtime=0.5))
        await ahead.wait_for(completed([later["id"]]), timeout=30)
    later_sequences = [u["sequence"] for u in ahead.changes]
    assert later_sequences[0] > snapshot["sequence"] and strictly_increasing(later_sequences)
    assert_lifecycle(ahead.changes, later["id"], LIFECYCLE)


# --- (e) authentication ------------------------------------------------------------------------


def tampered(token: str) -> str:
    """The same token id with a different (well-formed) secret."""
    return token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")


def assert_unauthenticated(response: httpx.Response) -> None:
    assert response.status_code == 401, response.text
    body = response.json()
    assert "data" in body and body["data"] is None, body
    assert body["errors"], body
    assert all(e["extensions"]["code"] == UNAUTHENTICATED for e in body["errors"]), body


async def ws_connection_init(service: Service, payload: dict[str, Any]) -> tuple[list[Any], Any]:
    """Open a graphql-transport-ws socket and, like an eager client, send connection_init and at
    once a jobUpdates subscription. Returns the messages that arrived until the socket closed
    (or until the first `next`, when it is accepted) and the close code (None if still open)."""
    received: list[Any] = []
    async with websockets.connect(
        service.ws_url, subprotocols=[Subprotocol("graphql-transport-ws")], open_timeout=10
    ) as ws:
        assert ws.subprotocol == "graphql-transport-ws"
        await ws.send(json.dumps({"type": "connection_init", "payload": payload}))
        await ws.send(
            json.dumps(
                {
                    "id": "1",
                    "type": "subscribe",
                    "payload": {
                        "query": JOB_UPDATES,
                        "variables": {"clusterId": cluster(service)},
                    },
                }
            )
        )
        try:
            while True:
                message = json.loads(await asyncio.wait_for(ws.recv(), 10))
                received.append(message)
                if message["type"] == "next":
                    return received, None
        except ConnectionClosed:
            pass
        return received, ws.close_code


async def test_http_requests_without_a_valid_token_are_unauthenticated(
    embedded: Service,
) -> None:
    name = "unauthenticated-job"
    variables = {"input": batch_job(cluster(embedded), gpus=1, name=name)}
    submit_query = "mutation($input: SubmitJobInput!) { submitJob(input: $input) { __typename } }"
    admin_token = admin(embedded)
    wrong_secret = tampered(admin_token)
    for authorization in (
        None,
        "Bearer",
        "Bearer not-a-token",
        "Basic " + admin_token,
        f"Bearer {wrong_secret}",
        "Bearer bud_0123456789abcdef0123456789abcdef_" + "x" * 43,
    ):
        response = await post_graphql(
            embedded, submit_query, variables, authorization=authorization
        )
        assert_unauthenticated(response)
        response = await post_graphql(embedded, "{ clusters { id } }", authorization=authorization)
        assert_unauthenticated(response)

    # A revoked token: issued and revoked by the CLI on the same data dir, the server running.
    issued = await run_cli(embedded.env, "token", "create", "--name", "e2e-revoked", "--new-tenant")
    revoked = printed_tokens(issued.stdout)[0]
    token_id = re.search(r"token id:\s*([0-9a-f-]{36})", issued.stderr)
    assert token_id is not None, issued.stderr
    ok = await post_graphql(embedded, "{ clusters { id } }", token=revoked)
    assert ok.status_code == 200 and ok.json()["data"]["clusters"], ok.text
    await run_cli(embedded.env, "token", "revoke", token_id.group(1))
    assert_unauthenticated(await post_graphql(embedded, "{ clusters { id } }", token=revoked))
    assert_unauthenticated(await post_graphql(embedded, submit_query, variables, token=revoked))

    # None of the refused submissions was stored.
    async with http_client(embedded, admin_token) as session:
        result = await session.execute(
            GraphQLRequest("{ jobs(first: 100) { edges { node { name } } } }")
        )
    assert name not in [e["node"]["name"] for e in result["jobs"]["edges"]]


async def test_websocket_without_a_valid_token_is_closed_with_4403(embedded: Service) -> None:
    # The control: with the admin token the same messages get an ack, then the snapshot.
    messages, code = await ws_connection_init(
        embedded, {"Authorization": f"Bearer {admin(embedded)}"}
    )
    assert code is None, messages
    assert [m["type"] for m in messages] == ["connection_ack", "next"], messages
    assert messages[1]["payload"]["data"]["jobUpdates"]["__typename"] == "JobSnapshot"

    issued = await run_cli(
        embedded.env, "token", "create", "--name", "e2e-ws-revoked", "--new-tenant"
    )
    revoked = printed_tokens(issued.stdout)[0]
    token_id = re.search(r"token id:\s*([0-9a-f-]{36})", issued.stderr)
    assert token_id is not None, issued.stderr
    _, code = await ws_connection_init(embedded, {"Authorization": f"Bearer {revoked}"})
    assert code is None  # it works until revoked
    await run_cli(embedded.env, "token", "revoke", token_id.group(1))

    for payload in (
        {},
        {"Authorization": ""},
        {"Authorization": "Bearer not-a-token"},
        {"Authorization": admin(embedded)},  # no scheme
        {"Authorization": f"Bearer {tampered(admin(embedded))}"},
        {"Authorization": f"Bearer {revoked}"},
    ):
        messages, code = await ws_connection_init(embedded, payload)
        assert (messages, code) == ([], 4403), payload


# --- (f) typed errors --------------------------------------------------------------------------


JOB_NAMES = "{ jobs(first: 100) { edges { node { id name } } } }"


async def test_submit_beyond_the_largest_node_is_a_validation_error_and_stores_nothing(
    embedded: Service,
) -> None:
    async with http_client(embedded, admin(embedded)) as session:
        before = await session.execute(GraphQLRequest(JOB_NAMES))
        job_input = batch_job(cluster(embedded), gpus=9)
        result = await submit(session, job_input)
        assert result["__typename"] == "ValidationError", result
        assert result["code"] == "VALIDATION_FAILED"
        assert [f["path"] for f in result["fields"]] == ["resources.gpuCount"], result
        assert result["fields"][0]["code"] == "EXCEEDS_NODE"
        after = await session.execute(GraphQLRequest(JOB_NAMES))
    assert after == before
    assert job_input["name"] not in [e["node"]["name"] for e in after["jobs"]["edges"]]


async def test_cancelling_a_completed_job_is_a_conflict(embedded: Service) -> None:
    cancel = GraphQLRequest(
        """mutation($id: ID!) { cancelJob(id: $id) {
            __typename ... on ConflictError { code message } ... on Job { status } } }"""
    )
    async with http_client(embedded, admin(embedded)) as session:
        job = await submit_ok(session, batch_job(cluster(embedded), gpus=1, runtime=0.5))
        await wait_for_status(session, job["id"], "COMPLETED")
        cancel.variable_values = {"id": job["id"]}
        result = (await session.execute(cancel))["cancelJob"]
        assert result["__typename"] == "ConflictError", result
        assert result["code"] == "ALREADY_FINISHED"
        await wait_for_status(session, job["id"], "COMPLETED", timeout=1)


async def test_a_failure_is_retried_and_retrying_beyond_max_retries_is_a_conflict(
    embedded: Service,
) -> None:
    """A FAILED job with retries left starts its next attempt by itself (with backoff); once
    they are used it stays FAILED, and asking for another is a conflict."""
    retry = """mutation($id: ID!) { retryJob(id: $id) {
        __typename ... on ConflictError { code message } ... on Job { status attempt retryCount }
    } }"""
    query = GraphQLRequest(
        "query Job($id: ID!) { job(id: $id) { id status attempt retryCount } }",
        variable_values={},
    )
    async with http_client(embedded, admin(embedded)) as session:
        job = await submit_ok(
            session,
            batch_job(cluster(embedded), gpus=1, runtime=0.5, outcome="FAILED", max_retries=1),
        )
        assert job["maxRetries"] == 1
        deadline = asyncio.get_running_loop().time() + 60
        while True:
            query.variable_values = {"id": job["id"]}
            seen = (await session.execute(query))["job"]
            if (seen["status"], seen["attempt"]) == ("FAILED", 1):
                break
            assert asyncio.get_running_loop().time() < deadline, seen
            await asyncio.sleep(0.2)
        assert seen["retryCount"] == 1
        refused = await session.execute(GraphQLRequest(retry, variable_values={"id": job["id"]}))
        assert refused["retryJob"]["__typename"] == "ConflictError", refused
        assert refused["retryJob"]["code"] == "RETRIES_EXHAUSTED"
        still = await wait_for_status(session, job["id"], "FAILED", timeout=1)
        assert still["retryCount"] == 1


async def test_a_malformed_id_is_a_bad_user_input_error_naming_the_field(
    embedded: Service,
) -> None:
    async with http_client(embedded, admin(embedded)) as session:
        with pytest.raises(TransportQueryError) as raised:
            await session.execute(
                GraphQLRequest(
                    "query($id: ID!) { job(id: $id) { id } }", variable_values={"id": "not-an-id"}
                )
            )
    assert raised.value.data == {"job": None}
    assert raised.value.errors is not None and len(raised.value.errors) == 1
    assert raised.value.errors[0]["extensions"] == {"code": "BAD_USER_INPUT", "field": "id"}
    assert raised.value.errors[0]["path"] == ["job"]


async def test_a_lone_surrogate_is_refused_naming_where_it_is(embedded: Service) -> None:
    """A string no store can encode (a lone UTF-16 surrogate, valid JSON) used to reach the
    database and fail there; it is refused with the request, naming its path, nothing stored."""
    job_input = batch_job(cluster(embedded), gpus=1)
    job_input["source"] = {"kind": "PIPELINE", "sourceId": "\ud800"}
    response = await post_graphql(
        embedded,
        "mutation($input: SubmitJobInput!) { submitJob(input: $input) { __typename } }",
        {"input": job_input},
        token=admin(embedded),
    )
    body = response.text
    for leak in ("Traceback", 'File "', "UnicodeEncodeError", "sqlite", "aiosqlite"):
        assert leak not in body, body
    assert response.status_code == 400, body
    [error] = response.json()["errors"]
    assert error["extensions"]["code"] == "BAD_REQUEST"
    assert "variables.input.source.sourceId" in error["message"]
    async with http_client(embedded, admin(embedded)) as session:
        after = await session.execute(GraphQLRequest(JOB_NAMES))
    assert job_input["name"] not in [e["node"]["name"] for e in after["jobs"]["edges"]]


async def test_a_budget_the_store_cannot_hold_is_rejected_not_mangled(embedded: Service) -> None:
    for budget in ("12345.6789", "1e11", "1e400"):
        job_input = batch_job(cluster(embedded), gpus=1, runtime=0.5)
        job_input["budgetLimit"] = budget
        await assert_stored_or_rejected(
            embedded,
            admin(embedded),
            job_input,
            field="budgetLimit",
            read="budgetLimit",
            same=same_budget(budget),
        )


# --- the WebSocket handshake ---------------------------------------------------------------------


async def test_only_graphql_transport_ws_is_spoken(embedded: Service) -> None:
    """The legacy graphql-ws protocol (subscriptions-transport-ws) is refused outright."""
    with contextlib.suppress(ConnectionClosed):
        async with websockets.connect(
            embedded.ws_url, subprotocols=[Subprotocol("graphql-ws")], open_timeout=10
        ) as ws:
            await ws.send(json.dumps({"type": "connection_init", "payload": {}}))
            await asyncio.wait_for(ws.recv(), 10)
    assert ws.close_code == 4406


async def test_browsers_on_other_origins_cannot_open_the_socket(embedded: Service) -> None:
    """Cross-site WebSocket hijacking: a page elsewhere may not ride the user's session."""
    with pytest.raises(InvalidStatus) as refused:
        async with websockets.connect(
            embedded.ws_url,
            subprotocols=[Subprotocol("graphql-transport-ws")],
            origin=Origin("https://evil.example"),
            open_timeout=10,
        ):
            pass
    assert refused.value.response.status_code == 403
    same_origin = Origin(embedded.base)
    async with websockets.connect(
        embedded.ws_url,
        subprotocols=[Subprotocol("graphql-transport-ws")],
        origin=same_origin,
        open_timeout=10,
    ) as ws:
        assert ws.subprotocol == "graphql-transport-ws"
