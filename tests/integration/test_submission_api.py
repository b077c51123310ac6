"""submitJob with a queue, a daily window, dependencies and a reservation, over HTTP (ASGI).

Covers: the new fields come back on the Job (queueName, window as "HH:MM", dependsOn,
reservationId, estimate and the kept estimates, null before any estimate); a tenant's first job
makes its "default" LocalQueue; every bad value is a ValidationError naming its field in camelCase
(a queue not in the tenant's namespace, malformed or empty windows, another tenant's or a missing
job, malformed ids, another tenant's reservation or one too small) and stores nothing.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from domain.model.ids import TenantId
from tests.integration.test_graphql_api import Api
from tests.integration.test_quota_api import RESERVE, TENANT, reservation, served

SUBMIT = """
mutation Submit($input: SubmitJobInput!) {
  submitJob(input: $input) {
    __typename
    ... on Job { id queueName window { start end } dependsOn reservationId
                 estimate { start end reason warnings } submissionEstimate { reason }
                 admissionEstimate { reason } }
    ... on UserError { code }
    ... on ValidationError { fields { path code } }
  }
}
"""


@pytest.fixture
async def api(db_url: str) -> AsyncIterator[Api]:
    async with served(db_url) as running:
        yield running


async def submit(api: Api, token: str, **changes: Any) -> dict[str, Any]:
    data = await api.ok(SUBMIT, {"input": api.job_input(**changes)}, token=token)
    result: dict[str, Any] = data["submitJob"]
    return result


async def test_a_job_with_a_window_dependencies_and_a_reservation(api: Api) -> None:
    token = await api.token(*TENANT)
    first = await submit(api, token, name="prepare")
    assert first["queueName"] == "default" and first["window"] is None
    assert first["estimate"] is first["submissionEstimate"] is first["admissionEstimate"] is None
    booked = await api.ok(RESERVE, {"input": reservation(api, "launch", 4)}, token=token)
    reservation_id = booked["createCapacityReservation"]["id"]
    job = await submit(
        api,
        token,
        name="train",
        queueName="default",
        window={"start": "22:00", "end": "06:30"},
        dependsOn=[first["id"], first["id"]],
        reservationId=reservation_id,
    )
    assert job["__typename"] == "Job", job
    assert job["window"] == {"start": "22:00", "end": "06:30"}
    assert job["dependsOn"] == [first["id"]]
    assert job["reservationId"] == reservation_id
    query = """query($id: ID!) { cluster(id: $id) { localQueues { name clusterQueue } } }"""
    seen = await api.ok(query, {"id": api.cluster_id}, token=token)
    assert seen["cluster"]["localQueues"] == [{"name": "default", "clusterQueue": "default"}]


async def test_bad_references_name_their_field_and_store_nothing(api: Api) -> None:
    alice = await api.token(*TENANT)
    bob = await api.token(*TENANT, tenant=TenantId(uuid.uuid4()))
    bobs_job = await submit(api, bob, name="bobs")
    bobs_reservation = (await api.ok(RESERVE, {"input": reservation(api, "his", 4)}, token=bob))[
        "createCapacityReservation"
    ]["id"]
    small = (await api.ok(RESERVE, {"input": reservation(api, "small", 1)}, token=alice))[
        "createCapacityReservation"
    ]["id"]
    stored = await api.count_jobs()
    cases: list[tuple[dict[str, Any], list[tuple[str, str]]]] = [
        ({"queueName": "team"}, [("queueName", "NOT_FOUND")]),
        ({"queueName": "Team Queue"}, [("queueName", "INVALID_NAME")]),
        ({"window": {"start": "25:00", "end": "06:00"}}, [("window.start", "INVALID")]),
        ({"window": {"start": "22:00", "end": "6:5"}}, [("window.end", "INVALID")]),
        ({"window": {"start": "noon", "end": "x"}}, [("window.start", "INVALID"), ("window.end", "INVALID")]),
        ({"window": {"start": "22:00", "end": "22:00"}}, [("window.end", "EMPTY_WINDOW")]),
        ({"dependsOn": [bobs_job["id"]]}, [("dependsOn", "NOT_FOUND")]),
        ({"dependsOn": [str(uuid.uuid4())]}, [("dependsOn", "NOT_FOUND")]),
        ({"dependsOn": ["not-an-id"]}, [("dependsOn", "MALFORMED_ID")]),
        ({"dependsOn": [str(uuid.uuid4()) for _ in range(33)]}, [("dependsOn", "TOO_MANY")]),
        ({"reservationId": bobs_reservation}, [("reservationId", "NOT_FOUND")]),
        ({"reservationId": small}, [("reservationId", "EXCEEDS_RESERVATION")]),
        ({"reservationId": "nope"}, [("reservationId", "MALFORMED_ID")]),
    ]  # fmt: skip
    for changes, expected in cases:
        result = await submit(api, alice, name="refused", **changes)
        assert result["__typename"] == "ValidationError", (changes, result)
        assert [(f["path"], f["code"]) for f in result["fields"]] == expected, changes
    assert await api.count_jobs() == stored
    query = """query($id: ID!) { cluster(id: $id) { localQueues { name } } }"""
    seen = await api.ok(query, {"id": api.cluster_id}, token=alice)
    assert seen["cluster"]["localQueues"] == []  # refused first submissions made no queue
