"""The quota service with fakes: who may do what, who sees what, and a new cluster's defaults.

Covers: every command that changes quota objects or priority classes needs clusters:write and
stores nothing without it; reading needs clusters:read; the defaults of a new cluster (a flavor
per GPU type and default-cpu, the ClusterQueue default holding the whole cluster) and of one
without GPUs, made once; a tenant sees only its own LocalQueues, an admin all, and everyone the
ClusterQueues with their usage rows.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from domain.errors import DomainError, Forbidden
from domain.model.ids import ClusterId, TenantId
from domain.model.job import JobPriority
from domain.model.principal import Principal, Scope
from domain.model.quota import (
    GPU_LABEL,
    NVIDIA_GPU,
    FlavorQuotas,
    PreemptionPolicy,
    QueueingStrategy,
    QuotaSettings,
    ReclaimWithinCohort,
    ResourceGroup,
    ResourceQuota,
    WithinClusterQueue,
)
from domain.services.quota_rules import CohortSpec
from tests.support.fakes import make_cluster
from tests.unit.test_quota_service import ADMIN, CLUSTER, OPERATOR, READER, World, spec


@pytest.fixture
async def world() -> World:
    w = World()
    await w.service.create_cohort(ADMIN, CohortSpec(CLUSTER, "lab"))
    return w


COMMANDS: list[tuple[str, dict[str, Any]]] = [
    ("create_flavor", {"cluster_id": CLUSTER, "name": "x", "node_labels": {}}),
    ("update_flavor", {"cluster_id": CLUSTER, "name": "default-cpu", "node_labels": {}}),
    ("delete_flavor", {"cluster_id": CLUSTER, "name": "default-cpu"}),
    ("delete_cluster_queue", {"cluster_id": CLUSTER, "name": "default"}),
    ("create_local_queue", {"cluster_id": CLUSTER, "name": "x", "cluster_queue": "default"}),
    ("delete_local_queue", {"cluster_id": CLUSTER, "name": "x"}),
    ("delete_cohort", {"cluster_id": CLUSTER, "name": "lab"}),
]


@pytest.mark.parametrize(("command", "kwargs"), COMMANDS, ids=[c for c, _ in COMMANDS])
async def test_changing_quotas_needs_clusters_write(
    world: World, command: str, kwargs: dict[str, Any]
) -> None:
    commits = world.uow.store.commits
    with pytest.raises(Forbidden):
        await getattr(world.service, command)(READER, **kwargs)
    for call in (
        world.service.create_cluster_queue(READER, spec()),
        world.service.update_cluster_queue(READER, spec(name="default")),
        world.service.update_priority_class(READER, JobPriority.LOW, value=2),
        world.service.create_cohort(READER, CohortSpec(CLUSTER, "x")),
        world.service.update_cohort(READER, CohortSpec(CLUSTER, "lab", parent="x")),
        world.service.update_quota_settings(READER, QuotaSettings(CLUSTER, fair_sharing=True)),
    ):
        with pytest.raises(Forbidden):
            await call
    assert world.uow.store.commits == commits


async def test_reading_needs_clusters_read(world: World) -> None:
    nobody = Principal(TenantId(uuid.uuid4()), frozenset({Scope.JOBS_READ}))
    for call in (world.service.overview(nobody, [CLUSTER]), world.service.priority_classes(nobody)):
        with pytest.raises(DomainError):
            await call


async def test_defaults_of_a_new_cluster(world: World) -> None:
    flavors = {name: f.node_labels for (_, name), f in world.q.flavors.items()}
    assert flavors == {
        "nvidia-a100-80gb": {GPU_LABEL: "nvidia-a100-80gb"},
        "nvidia-tesla-t4": {GPU_LABEL: "nvidia-tesla-t4"},
        "default-cpu": {},
    }
    queue = world.q.cluster_queues[(CLUSTER, "default")]
    assert queue.cohort is None and queue.queueing_strategy is QueueingStrategy.BEST_EFFORT_FIFO
    assert queue.preemption == PreemptionPolicy(
        WithinClusterQueue.LOWER_PRIORITY, ReclaimWithinCohort.NEVER
    )
    assert queue.resource_groups == (
        ResourceGroup(
            (NVIDIA_GPU,),
            (
                FlavorQuotas("nvidia-a100-80gb", (ResourceQuota(NVIDIA_GPU, 16),)),
                FlavorQuotas("nvidia-tesla-t4", (ResourceQuota(NVIDIA_GPU, 4),)),
            ),
        ),
        ResourceGroup(
            ("cpu", "memory"),
            (
                FlavorQuotas(
                    "default-cpu", (ResourceQuota("cpu", 192), ResourceQuota("memory", 1536))
                ),
            ),
        ),
    )
    assert await world.service.ensure_defaults(world.cluster) is False  # it has a ClusterQueue


async def test_defaults_of_a_cluster_without_gpus_or_quotas() -> None:
    w = World()
    bare = make_cluster(ClusterId(uuid.uuid4()), nodes=[("nvidia-tesla-t4", 0)])
    w.uow.store.clusters[bare.id] = bare
    assert await w.service.ensure_defaults(bare) is True
    [queue] = [q for (c, _), q in w.q.cluster_queues.items() if c == bare.id]
    assert [g.covered_resources for g in queue.resource_groups] == [("cpu", "memory")]
    assert [name for (c, name) in w.q.flavors if c == bare.id] == ["default-cpu"]


async def test_what_each_principal_sees(world: World) -> None:
    for tenant in (OPERATOR, READER):
        await world.service.create_local_queue(
            ADMIN,
            cluster_id=CLUSTER,
            name="team",
            cluster_queue="default",
            tenant_id=tenant.tenant_id,
        )
    seen = {p: (await world.service.overview(p, [CLUSTER]))[CLUSTER] for p in (ADMIN, READER)}
    assert [q.tenant_id for q in seen[READER].local_queues] == [READER.tenant_id]
    assert len(seen[ADMIN].local_queues) == 2
    for view in seen.values():
        assert [q.name for q in view.cluster_queues] == ["default"]
        assert [c.name for c in view.cohorts] == ["lab"]
        assert len(view.flavors) == 3
        assert [u.resource for u in view.usage["default"]] == [
            NVIDIA_GPU,
            NVIDIA_GPU,
            "cpu",
            "memory",
        ]
