"""Kueue's settings through the quota API over HTTP (ASGI), on PostgreSQL and SQLite.

Covers: a ClusterQueue made without them shows Kueue's defaults (borrowWithinCohort NEVER,
fungibility MAY_STOP_SEARCH / TRY_NEXT_FLAVOR, weight 1); they are set on create and replaced on
update; a borrowWithinCohort policy without reclaimWithinCohort (Kueue's CEL rule) and weights
Kueue refuses are typed errors naming the field in camelCase, and nothing is stored; a flavor
fungibility preference is set, read back and cleared, and refused (on flavorFungibility.preference,
nothing stored) unless whenCanBorrow and whenCanPreempt are both TRY_NEXT_FLAVOR; cohorts form
a tree: an implicit parent, own quotas with limits only under a parent, a weight, updateCohort
replacing the whole, a parent that would make a cycle refused on `parent`, an unknown cohort
NOT_FOUND; the cluster's fair-sharing switch reads false until updateQuotaSettings sets it, which
needs clusters:write and a cluster that exists.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.integration.test_graphql_api import Api
from tests.integration.test_quota_api import RESULT, TENANT, gpu_queue, served

SETTINGS = """preemption { withinClusterQueue reclaimWithinCohort
                 borrowWithinCohort { policy maxPriorityThreshold } }
               flavorFungibility { whenCanBorrow whenCanPreempt preference }
               fairSharingWeight"""
QUEUE = f"""mutation($input: ClusterQueueInput!) {{ %s(input: $input) {{
  {RESULT} ... on ClusterQueue {{ name {SETTINGS} }} }} }}"""
COHORT_FIELDS = """name description parent fairSharingWeight
  resourceGroups { coveredResources flavors { flavor resources {
    name nominalQuota borrowingLimit lendingLimit } } }"""
COHORT = f"""mutation($input: CohortInput!) {{ %s(input: $input) {{
  {RESULT} ... on Cohort {{ {COHORT_FIELDS} }} }} }}"""
CLUSTER = f"""query($id: ID!) {{ cluster(id: $id) {{
  quotaSettings {{ clusterId fairSharing }}
  cohorts {{ {COHORT_FIELDS} }}
  clusterQueues {{ name {SETTINGS} }} }} }}"""
SET_FAIR_SHARING = f"""mutation($input: QuotaSettingsInput!) {{ updateQuotaSettings(input: $input) {{
  {RESULT} ... on QuotaSettings {{ clusterId fairSharing }} }} }}"""

A100 = "nvidia-a100-80gb"
DEFAULTS: dict[str, Any] = {
    "preemption": {
        "withinClusterQueue": "LOWER_PRIORITY",
        "reclaimWithinCohort": "NEVER",
        "borrowWithinCohort": {"policy": "NEVER", "maxPriorityThreshold": None},
    },
    "flavorFungibility": {
        "whenCanBorrow": "MAY_STOP_SEARCH",
        "whenCanPreempt": "TRY_NEXT_FLAVOR",
        "preference": None,
    },
    "fairSharingWeight": 1.0,
}
TUNED: dict[str, Any] = {
    "preemption": {
        "withinClusterQueue": "NEVER",
        "reclaimWithinCohort": "LOWER_PRIORITY",
        "borrowWithinCohort": {"policy": "LOWER_PRIORITY", "maxPriorityThreshold": 100},
    },
    "flavorFungibility": {
        "whenCanBorrow": "TRY_NEXT_FLAVOR",
        "whenCanPreempt": "MAY_STOP_SEARCH",
        "preference": None,
    },
    "fairSharingWeight": 2.5,
}


@pytest.fixture
async def api(db_url: str) -> AsyncIterator[Api]:
    async with served(db_url) as running:
        yield running


async def test_cluster_queue_settings(api: Api) -> None:
    admin = await api.token()

    async def call(operation: str, value: dict[str, Any]) -> dict[str, Any]:
        answer: dict[str, Any] = (await api.ok(QUEUE % operation, {"input": value}, token=admin))[
            operation
        ]
        return answer

    made = await call("createClusterQueue", gpu_queue(api, "research", 4))
    assert made == {"__typename": "ClusterQueue", "name": "research", **DEFAULTS}
    tuned = await call("updateClusterQueue", {**gpu_queue(api, "research", 4), **TUNED})
    assert tuned == {"__typename": "ClusterQueue", "name": "research", **TUNED}
    made = await call("createClusterQueue", {**gpu_queue(api, "batch", 2), **TUNED})
    assert made == {"__typename": "ClusterQueue", "name": "batch", **TUNED}

    reclaim_never = {
        **TUNED["preemption"],
        "reclaimWithinCohort": "NEVER",
    }
    refusals: list[tuple[dict[str, Any], str, str]] = [
        ({"preemption": reclaim_never}, "preemption.borrowWithinCohort.policy", "NEEDS_RECLAIM"),
        ({"fairSharingWeight": -1}, "fairSharingWeight", "INVALID"),
        ({"fairSharingWeight": 1e-10}, "fairSharingWeight", "TOO_SMALL"),
    ]
    for changes, path, code in refusals:
        for operation in ("createClusterQueue", "updateClusterQueue"):
            name = "research" if operation == "updateClusterQueue" else "other"
            refused = await call(operation, {**gpu_queue(api, name, 1), **changes})
            assert refused["__typename"] == "ValidationError", (changes, operation)
            assert refused["fields"] == [{"path": path, "code": code}]
    message = await api.ok(
        """mutation($input: ClusterQueueInput!) { updateClusterQueue(input: $input) {
             ... on ValidationError { fields { message } } } }""",
        {"input": {**gpu_queue(api, "research", 1), "preemption": reclaim_never}},
        token=admin,
    )
    assert message["updateClusterQueue"]["fields"] == [
        {
            "message": "must be NEVER while preemption.reclaimWithinCohort is NEVER "
            "(Kueue: reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never)"
        }
    ]
    listed = (await api.ok(CLUSTER, {"id": api.cluster_id}, token=admin))["cluster"]
    assert {
        q["name"]: {k: v for k, v in q.items() if k != "name"} for q in listed["clusterQueues"]
    } == {
        "batch": TUNED,
        "default": DEFAULTS,
        "research": TUNED,
    }


async def test_flavor_fungibility_preference(api: Api) -> None:
    admin = await api.token()

    async def call(operation: str, value: dict[str, Any]) -> dict[str, Any]:
        answer: dict[str, Any] = (await api.ok(QUEUE % operation, {"input": value}, token=admin))[
            operation
        ]
        return answer

    async def stored() -> dict[str, Any]:
        listed = (await api.ok(CLUSTER, {"id": api.cluster_id}, token=admin))["cluster"]
        return {q["name"]: q["flavorFungibility"] for q in listed["clusterQueues"]}

    def fungibility(borrow: str, preempt: str, preference: str | None) -> dict[str, Any]:
        return {"whenCanBorrow": borrow, "whenCanPreempt": preempt, "preference": preference}

    try_both = fungibility("TRY_NEXT_FLAVOR", "TRY_NEXT_FLAVOR", "PREEMPTION_OVER_BORROWING")
    made = await call("createClusterQueue", {**gpu_queue(api, "research", 4)})
    assert made["flavorFungibility"] == DEFAULTS["flavorFungibility"]
    tuned = await call(
        "updateClusterQueue", {**gpu_queue(api, "research", 4), "flavorFungibility": try_both}
    )
    assert tuned["flavorFungibility"] == try_both
    made = await call(
        "createClusterQueue",
        {
            **gpu_queue(api, "batch", 2),
            "flavorFungibility": {**try_both, "preference": "BORROWING_OVER_PREEMPTION"},
        },
    )
    assert made["flavorFungibility"]["preference"] == "BORROWING_OVER_PREEMPTION"
    assert (await stored())["research"] == try_both

    for borrow, preempt in [
        ("MAY_STOP_SEARCH", "TRY_NEXT_FLAVOR"),
        ("TRY_NEXT_FLAVOR", "MAY_STOP_SEARCH"),
        ("MAY_STOP_SEARCH", "MAY_STOP_SEARCH"),
    ]:
        wrong = fungibility(borrow, preempt, "PREEMPTION_OVER_BORROWING")
        for operation in ("createClusterQueue", "updateClusterQueue"):
            name = "research" if operation == "updateClusterQueue" else "other"
            refused = await call(operation, {**gpu_queue(api, name, 1), "flavorFungibility": wrong})
            assert refused["__typename"] == "ValidationError", (wrong, operation)
            assert refused["fields"] == [
                {"path": "flavorFungibility.preference", "code": "NEEDS_TRY_NEXT_FLAVOR"}
            ]
    message = await api.ok(
        """mutation($input: ClusterQueueInput!) { updateClusterQueue(input: $input) {
             ... on ValidationError { fields { message } } } }""",
        {
            "input": {
                **gpu_queue(api, "research", 1),
                "flavorFungibility": {"preference": "PREEMPTION_OVER_BORROWING"},
            }
        },
        token=admin,
    )
    assert message["updateClusterQueue"]["fields"] == [
        {
            "message": "must be unset unless flavorFungibility.whenCanBorrow and "
            "flavorFungibility.whenCanPreempt are both TRY_NEXT_FLAVOR (Kueue: preference can "
            "only be set when both whenCanBorrow and whenCanPreempt are TryNextFlavor)"
        }
    ]
    after = await stored()
    assert "other" not in after and after["research"] == try_both  # nothing stored

    cleared = await call(
        "updateClusterQueue",
        {**gpu_queue(api, "research", 4), "flavorFungibility": {**try_both, "preference": None}},
    )
    assert cleared["flavorFungibility"] == {**try_both, "preference": None}
    omitted = await call(
        "updateClusterQueue",
        {
            **gpu_queue(api, "batch", 2),
            "flavorFungibility": {"whenCanBorrow": "TRY_NEXT_FLAVOR"},
        },
    )
    assert omitted["flavorFungibility"] == fungibility("TRY_NEXT_FLAVOR", "TRY_NEXT_FLAVOR", None)
    assert await stored() == {
        "batch": fungibility("TRY_NEXT_FLAVOR", "TRY_NEXT_FLAVOR", None),
        "default": DEFAULTS["flavorFungibility"],
        "research": {**try_both, "preference": None},
    }


def pool(**limits: float) -> list[dict[str, Any]]:
    return [
        {
            "coveredResources": ["nvidia.com/gpu"],
            "flavors": [
                {
                    "flavor": A100,
                    "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 2, **limits}],
                }
            ],
        }
    ]


async def test_cohort_trees(api: Api) -> None:
    admin = await api.token()

    async def call(operation: str, **value: Any) -> dict[str, Any]:
        answer: dict[str, Any] = (
            await api.ok(
                COHORT % operation,
                {"input": {"clusterId": api.cluster_id, **value}},
                token=admin,
            )
        )[operation]
        return answer

    team = await call(
        "createCohort",
        name="team",
        parent="org",  # no such cohort: an implicit one, as in Kueue
        resourceGroups=pool(borrowingLimit=1, lendingLimit=4),  # a cohort may lend beyond nominal
        fairSharingWeight=0.5,
    )
    limits = {"borrowingLimit": 1.0, "lendingLimit": 4.0}
    expected_pool = [
        {
            "coveredResources": ["nvidia.com/gpu"],
            "flavors": [
                {
                    "flavor": A100,
                    "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 2.0, **limits}],
                }
            ],
        }
    ]
    assert team == {
        "__typename": "Cohort",
        "name": "team",
        "description": None,
        "parent": "org",
        "fairSharingWeight": 0.5,
        "resourceGroups": expected_pool,
    }
    refused = await call("createCohort", name="org", resourceGroups=pool(borrowingLimit=1))
    assert refused["fields"] == [
        {"path": "resourceGroups.0.flavors.0.resources.0.borrowingLimit", "code": "NEEDS_PARENT"}
    ]
    cycle = await call("createCohort", name="org", parent="team")
    assert cycle["fields"] == [{"path": "parent", "code": "CYCLE"}]
    bad = await call("createCohort", name="org", parent="Org", fairSharingWeight=-2)
    assert bad["fields"] == [
        {"path": "parent", "code": "INVALID_NAME"},
        {"path": "fairSharingWeight", "code": "INVALID"},
    ]
    org = await call("createCohort", name="org", description="everyone", fairSharingWeight=0)
    assert (org["__typename"], org["parent"], org["fairSharingWeight"]) == ("Cohort", None, 0.0)
    missing = await call("updateCohort", name="nobody")
    assert missing == {"__typename": "NotFoundError", "code": "NOT_FOUND"}
    refused = await call("updateCohort", name="org", parent="team")
    assert refused["fields"] == [{"path": "parent", "code": "CYCLE"}]
    moved = await call("updateCohort", name="team", description="now a root")
    assert {k: moved[k] for k in ("parent", "fairSharingWeight", "resourceGroups")} == {
        "parent": None,
        "fairSharingWeight": 1.0,
        "resourceGroups": [],
    }
    listed = (await api.ok(CLUSTER, {"id": api.cluster_id}, token=admin))["cluster"]["cohorts"]
    assert [(c["name"], c["description"], c["parent"]) for c in listed] == [
        ("org", "everyone", None),
        ("team", "now a root", None),
    ]


async def test_fair_sharing_switch(api: Api) -> None:
    admin, tenant = await api.token(), await api.token(*TENANT)
    settings = (await api.ok(CLUSTER, {"id": api.cluster_id}, token=tenant))["cluster"]
    assert settings["quotaSettings"] == {"clusterId": api.cluster_id, "fairSharing": False}

    async def set_to(value: bool, *, token: str = admin, cluster: str | None = None) -> Any:
        given = {"clusterId": cluster or api.cluster_id, "fairSharing": value}
        return (await api.ok(SET_FAIR_SHARING, {"input": given}, token=token))[
            "updateQuotaSettings"
        ]

    assert await set_to(True, token=tenant) == {"__typename": "ForbiddenError", "code": "FORBIDDEN"}
    unknown = await set_to(True, cluster=str(uuid.uuid4()))
    assert unknown == {"__typename": "NotFoundError", "code": "NOT_FOUND"}
    assert await set_to(True) == {
        "__typename": "QuotaSettings",
        "clusterId": api.cluster_id,
        "fairSharing": True,
    }
    shown = (await api.ok(CLUSTER, {"id": api.cluster_id}, token=tenant))["cluster"]
    assert shown["quotaSettings"]["fairSharing"] is True
    assert (await set_to(False))["fairSharing"] is False
