"""Deployment warnings through the documents BudAdmin sends (the persisted DeployModel and
ScaleDeployment, from frontend-contract/operations), on SQLite and PostgreSQL.

Covers: deployModel with more replicas than the cluster can ever run is accepted, and its answer
says how many can run and why (`warnings`: code, message, path); scaling down to what fits clears
the warning; scaling up past it brings it back.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from budcluster.http.persisted import MANIFEST
from tests.integration.test_graphql_api import Api, api_on


@pytest.fixture
async def api(db_url: str) -> AsyncIterator[Api]:
    async with api_on(db_url) as made:
        yield made  # a simulated cluster of one node of 8 A100s


def operation(name: str) -> str:
    """The manifest's document whose operation is `name`."""
    for text in json.loads(MANIFEST.read_text()).values():
        if f"mutation {name}(" in text:
            return str(text)
    raise AssertionError(f"no mutation {name} in the persisted documents")


def view(answer: dict[str, Any]) -> tuple[str, int, list[dict[str, str]]]:
    assert answer["__typename"] == "Deployment", answer
    return answer["status"], answer["replicas"], answer["warnings"]


async def test_more_replicas_than_the_cluster_holds_are_accepted_with_a_warning(api: Api) -> None:
    token = await api.token()
    cluster = (await api.ok("{ clusters { name } }", token=token))["clusters"][0]["name"]
    made = await api.ok(
        operation("DeployModel"),
        {
            "input": {
                "name": "qwen",
                "projectId": api.project,
                "clusterId": api.cluster_id,
                "model": "Qwen/Qwen2.5-1.5B-Instruct",
                "gpuType": "nvidia-a100-80gb",
                "replicas": 10,
            }
        },
        token=token,
    )
    deployment = made["deployModel"]
    assert view(deployment) == (
        "DEPLOYING",
        10,
        [
            {
                "code": "REPLICAS_EXCEED_CLUSTER",
                "message": f"only 8 of 10 replicas can ever run: cluster {cluster} has 8 "
                "nvidia-a100-80gb GPUs",
                "path": "replicas",
            }
        ],
    )

    scale = operation("ScaleDeployment")
    down = await api.ok(scale, {"id": deployment["id"], "replicas": 8}, token=token)
    assert view(down["scaleDeployment"])[1:] == (8, [])
    up = await api.ok(scale, {"id": deployment["id"], "replicas": 9}, token=token)
    assert [w["message"] for w in view(up["scaleDeployment"])[2]] == [
        f"only 8 of 9 replicas can ever run: cluster {cluster} has 8 nvidia-a100-80gb GPUs"
    ]
