"""The quota service with fakes: what it accepts and what it refuses.

Covers, as tables: every ClusterQueue rule (names, cohort, limits only in a cohort, lending within
nominal, finite non-negative quotas, flavors that exist and appear once, covered resources) and
the field path it names; flavors' names and labels; priority class values and their order. Also:
duplicates are conflicts; removals are refused while in use; LocalQueues live in their tenant's
namespace (admins may act for others); nothing is stored when a command is refused.
"""

from __future__ import annotations

import math
import uuid
from dataclasses import replace
from typing import Any

import pytest

from domain.errors import Conflict, Forbidden, NotFound, ValidationFailed
from domain.model.ids import ClusterId, TenantId
from domain.model.job import JobPriority, JobStatus
from domain.model.principal import Principal, Scope
from domain.model.quota import (
    GPU_LABEL,
    NVIDIA_GPU,
    FlavorQuotas,
    PreemptionPolicy,
    QueueingStrategy,
    ReclaimWithinCohort,
    ResourceGroup,
    ResourceQuota,
    WithinClusterQueue,
    tenant_namespace,
)
from domain.services.quota_rules import ClusterQueueSpec, CohortSpec
from domain.services.quotas import QuotaService
from tests.support.fakes import (
    FakeClock,
    FakeUnitOfWorkFactory,
    QuotaState,
    install_cluster,
    make_cluster,
)
from tests.unit.test_job_model import new_job

CLUSTER = ClusterId(uuid.uuid4())
ADMIN = Principal(TenantId(uuid.uuid4()), frozenset({Scope.ADMIN}))
OPERATOR = Principal(
    TenantId(uuid.uuid4()),
    frozenset({Scope.CLUSTERS_READ, Scope.CLUSTERS_WRITE, Scope.QUEUES_WRITE}),
)
READER = Principal(TenantId(uuid.uuid4()), frozenset({Scope.CLUSTERS_READ, Scope.JOBS_WRITE}))
TENANT = Principal(
    TenantId(uuid.uuid4()),
    frozenset({Scope.CLUSTERS_READ, Scope.JOBS_WRITE, Scope.QUEUES_WRITE}),
)

GPU = (NVIDIA_GPU,)


def gpu_group(*quotas: ResourceQuota, flavor: str = "nvidia-a100-80gb") -> ResourceGroup:
    return ResourceGroup(GPU, (FlavorQuotas(flavor, quotas),))


def spec(**changes: Any) -> ClusterQueueSpec:
    base = ClusterQueueSpec(
        cluster_id=CLUSTER,
        name="research",
        cohort="lab",
        queueing_strategy=QueueingStrategy.STRICT_FIFO,
        resource_groups=(gpu_group(ResourceQuota(NVIDIA_GPU, 8, 4, 2)),),
        preemption=PreemptionPolicy(WithinClusterQueue.NEVER, ReclaimWithinCohort.ANY),
    )
    return replace(base, **changes)


class World:
    def __init__(self) -> None:
        self.uow = FakeUnitOfWorkFactory()
        self.clock = FakeClock()
        self.cluster = install_cluster(self.uow.store, make_cluster(CLUSTER))
        self.service = QuotaService(uow=self.uow, clock=self.clock)

    @property
    def q(self) -> QuotaState:
        return self.uow.store.quota


@pytest.fixture
async def world() -> World:
    w = World()
    await w.service.create_cohort(ADMIN, CohortSpec(CLUSTER, "lab"))
    return w


def issues(caught: pytest.ExceptionInfo[ValidationFailed]) -> set[tuple[str, str]]:
    return {(i.field, i.code) for i in caught.value.issues}


R0 = "resource_groups.0.flavors.0.resources.0"
QUEUE_CASES: list[tuple[str, dict[str, Any], set[tuple[str, str]]]] = [
    ("uppercase name", {"name": "Research"}, {("name", "INVALID_NAME")}),
    ("name over 63", {"name": "q" * 64}, {("name", "INVALID_NAME")}),
    ("unknown cohort", {"cohort": "nobody"}, {("cohort", "NOT_FOUND")}),
    ("bad cohort name", {"cohort": "No Such"}, {("cohort", "INVALID_NAME")}),
    ("borrowing limit without cohort",
     {"cohort": None, "resource_groups": (gpu_group(ResourceQuota(NVIDIA_GPU, 8, 4)),)},
     {(f"{R0}.borrowing_limit", "NEEDS_COHORT")}),
    ("lending limit without cohort",
     {"cohort": None, "resource_groups": (gpu_group(ResourceQuota(NVIDIA_GPU, 8, None, 2)),)},
     {(f"{R0}.lending_limit", "NEEDS_COHORT")}),
    ("lending more than nominal",
     {"resource_groups": (gpu_group(ResourceQuota(NVIDIA_GPU, 8, None, 9)),)},
     {(f"{R0}.lending_limit", "EXCEEDS_NOMINAL")}),
    ("negative nominal", {"resource_groups": (gpu_group(ResourceQuota(NVIDIA_GPU, -1)),)},
     {(f"{R0}.nominal_quota", "INVALID")}),
    ("nan nominal", {"resource_groups": (gpu_group(ResourceQuota(NVIDIA_GPU, math.nan)),)},
     {(f"{R0}.nominal_quota", "INVALID")}),
    ("infinite borrowing",
     {"resource_groups": (gpu_group(ResourceQuota(NVIDIA_GPU, 8, math.inf)),)},
     {(f"{R0}.borrowing_limit", "INVALID")}),
    ("negative lending", {"resource_groups": (gpu_group(ResourceQuota(NVIDIA_GPU, 8, None, -1)),)},
     {(f"{R0}.lending_limit", "INVALID")}),
    ("unknown flavor",
     {"resource_groups": (gpu_group(ResourceQuota(NVIDIA_GPU, 8), flavor="h100"),)},
     {("resource_groups.0.flavors.0.flavor", "NOT_FOUND")}),
    ("flavor in two groups",
     {"resource_groups": (gpu_group(ResourceQuota(NVIDIA_GPU, 8)),
                          ResourceGroup(("cpu",), (FlavorQuotas("nvidia-a100-80gb",
                                                                (ResourceQuota("cpu", 8),)),)))},
     {("resource_groups.1.flavors.0.flavor", "DUPLICATE")}),
    ("flavor twice in a group",
     {"resource_groups": (ResourceGroup(GPU, (FlavorQuotas("nvidia-tesla-t4", ()),
                                              FlavorQuotas("nvidia-tesla-t4", ()))),)},
     {("resource_groups.0.flavors.1.flavor", "DUPLICATE")}),
    ("nothing covered",
     {"resource_groups": (ResourceGroup((), (FlavorQuotas("nvidia-tesla-t4", ()),)),)},
     {("resource_groups.0.covered_resources", "REQUIRED")}),
    ("no flavors", {"resource_groups": (ResourceGroup(GPU, ()),)},
     {("resource_groups.0.flavors", "REQUIRED")}),
    ("resource not covered",
     {"resource_groups": (gpu_group(ResourceQuota("cpu", 8)),)},
     {(f"{R0}.name", "NOT_COVERED")}),
    ("resource listed twice",
     {"resource_groups": (gpu_group(ResourceQuota(NVIDIA_GPU, 8), ResourceQuota(NVIDIA_GPU, 1)),)},
     {("resource_groups.0.flavors.0.resources.1.name", "DUPLICATE")}),
    ("resource in two groups",
     {"resource_groups": (gpu_group(ResourceQuota(NVIDIA_GPU, 8)),
                          ResourceGroup(GPU, (FlavorQuotas("nvidia-tesla-t4", ()),)))},
     {("resource_groups.1.covered_resources", "DUPLICATE")}),
    ("empty resource name", {"resource_groups": (ResourceGroup(("",), (FlavorQuotas("nvidia-tesla-t4", ()),)),)},
     {("resource_groups.0.covered_resources", "INVALID")}),
]  # fmt: skip


@pytest.mark.parametrize(("changes", "expected"), [c[1:] for c in QUEUE_CASES],
                         ids=[c[0] for c in QUEUE_CASES])  # fmt: skip
async def test_cluster_queue_rules(
    world: World, changes: dict[str, Any], expected: set[tuple[str, str]]
) -> None:
    before = dict(world.q.cluster_queues)
    for command in (world.service.create_cluster_queue, world.service.update_cluster_queue):
        with pytest.raises(ValidationFailed) as caught:
            await command(ADMIN, spec(**changes))
        assert issues(caught) == expected
    assert world.q.cluster_queues == before


async def test_a_good_cluster_queue_is_created_updated_and_unique(world: World) -> None:
    created = await world.service.create_cluster_queue(OPERATOR, spec())
    assert world.q.cluster_queues[(CLUSTER, "research")] == created
    assert created.quota("nvidia-a100-80gb", NVIDIA_GPU) == ResourceQuota(NVIDIA_GPU, 8, 4, 2)
    with pytest.raises(Conflict) as caught:
        await world.service.create_cluster_queue(OPERATOR, spec())
    assert caught.value.code == "ALREADY_EXISTS"
    world.clock.advance(60)
    updated = await world.service.update_cluster_queue(
        OPERATOR, spec(cohort=None, resource_groups=(gpu_group(ResourceQuota(NVIDIA_GPU, 2)),))
    )
    assert (updated.cohort, updated.created_at) == (None, created.created_at)
    assert updated.updated_at > created.updated_at
    assert world.q.cluster_queues[(CLUSTER, "research")] == updated
    with pytest.raises(NotFound):
        await world.service.update_cluster_queue(OPERATOR, spec(name="nothing"))
    with pytest.raises(NotFound):
        await world.service.create_cluster_queue(OPERATOR, spec(cluster_id=ClusterId(uuid.uuid4())))


FLAVOR_CASES: list[tuple[str, str, dict[str, str], str]] = [
    ("bad name", "A100", {GPU_LABEL: "x"}, "name"),
    ("long name", "f" * 64, {}, "name"),
    ("bad label key", "h100", {"bad key": "x"}, "node_labels"),
    ("bad label prefix", "h100", {"Example.com/x": "y"}, "node_labels"),
    ("bad label value", "h100", {GPU_LABEL: "not valid!"}, "node_labels"),
    ("long label value", "h100", {GPU_LABEL: "v" * 64}, "node_labels"),
]


@pytest.mark.parametrize(("name", "labels", "path"), [c[1:] for c in FLAVOR_CASES],
                         ids=[c[0] for c in FLAVOR_CASES])  # fmt: skip
async def test_flavor_rules(world: World, name: str, labels: dict[str, str], path: str) -> None:
    with pytest.raises(ValidationFailed) as caught:
        await world.service.create_flavor(ADMIN, cluster_id=CLUSTER, name=name, node_labels=labels)
    assert [i.field for i in caught.value.issues] == [path]
    assert (CLUSTER, name) not in world.q.flavors


async def test_flavors_are_created_updated_and_removed_unless_used(world: World) -> None:
    labels = {GPU_LABEL: "nvidia-h100-sxm", "pool": "spare"}
    made = await world.service.create_flavor(
        OPERATOR, cluster_id=CLUSTER, name="h100", node_labels=labels
    )
    assert world.q.flavors[(CLUSTER, "h100")] == made
    with pytest.raises(Conflict):
        await world.service.create_flavor(OPERATOR, cluster_id=CLUSTER, name="h100", node_labels={})
    changed = await world.service.update_flavor(
        OPERATOR, cluster_id=CLUSTER, name="h100", node_labels={"pool": "main"}
    )
    assert world.q.flavors[(CLUSTER, "h100")].node_labels == changed.node_labels == {"pool": "main"}
    with pytest.raises(Conflict) as caught:  # the default ClusterQueue uses it
        await world.service.delete_flavor(OPERATOR, cluster_id=CLUSTER, name="nvidia-tesla-t4")
    assert caught.value.code == "IN_USE" and "cluster queue default" in caught.value.message
    await world.service.delete_flavor(OPERATOR, cluster_id=CLUSTER, name="h100")
    assert (CLUSTER, "h100") not in world.q.flavors
    with pytest.raises(NotFound):
        await world.service.delete_flavor(OPERATOR, cluster_id=CLUSTER, name="h100")


PRIORITY_CASES: list[tuple[JobPriority, int, str | None]] = [
    (JobPriority.HIGH, 500, None),
    (JobPriority.SPOT, -1_000_000_000, None),
    (JobPriority.CRITICAL, 1_000_000_000, None),
    (JobPriority.HIGH, 1000, "BREAKS_ORDER"),
    (JobPriority.HIGH, 10, "BREAKS_ORDER"),
    (JobPriority.LOW, 0, "BREAKS_ORDER"),
    (JobPriority.SPOT, 1, "BREAKS_ORDER"),
    (JobPriority.CRITICAL, 100, "BREAKS_ORDER"),
    (JobPriority.CRITICAL, 1_000_000_001, "INVALID"),
    (JobPriority.SPOT, -1_000_000_001, "INVALID"),
]


@pytest.mark.parametrize(("priority", "value", "code"), PRIORITY_CASES)
async def test_priority_class_values_keep_their_order(
    world: World, priority: JobPriority, value: int, code: str | None
) -> None:
    if code is None:
        changed = await world.service.update_priority_class(OPERATOR, priority, value=value)
        assert world.q.priority_classes[priority] == changed and changed.value == value
        return
    before = dict(world.q.priority_classes)
    with pytest.raises(ValidationFailed) as caught:
        await world.service.update_priority_class(OPERATOR, priority, value=value)
    assert issues(caught) == {("value", code)}
    assert world.q.priority_classes == before


async def test_priority_class_description(world: World) -> None:
    with pytest.raises(ValidationFailed) as caught:
        await world.service.update_priority_class(OPERATOR, JobPriority.LOW, description="x" * 501)
    assert issues(caught) == {("description", "INVALID")}
    changed = await world.service.update_priority_class(
        OPERATOR, JobPriority.LOW, description="nightly batch"
    )
    assert (changed.value, changed.description) == (1, "nightly batch")
    assert [pc.priority for pc in await world.service.priority_classes(READER)] == list(JobPriority)


async def test_local_queues_live_in_their_tenants_namespace(world: World) -> None:
    mine = await world.service.create_local_queue(
        OPERATOR, cluster_id=CLUSTER, name="team", cluster_queue="default"
    )
    assert mine.namespace == tenant_namespace(OPERATOR.tenant_id)
    assert mine.tenant_id == OPERATOR.tenant_id
    with pytest.raises(Forbidden):
        await world.service.create_local_queue(
            OPERATOR,
            cluster_id=CLUSTER,
            name="x",
            cluster_queue="default",
            tenant_id=READER.tenant_id,
        )
    theirs = await world.service.create_local_queue(
        ADMIN, cluster_id=CLUSTER, name="team", cluster_queue="default", tenant_id=READER.tenant_id
    )
    assert theirs.namespace == tenant_namespace(READER.tenant_id)
    with pytest.raises(Conflict):
        await world.service.create_local_queue(
            OPERATOR, cluster_id=CLUSTER, name="team", cluster_queue="default"
        )
    with pytest.raises(ValidationFailed) as caught:
        await world.service.create_local_queue(
            OPERATOR, cluster_id=CLUSTER, name="other", cluster_queue="nothing"
        )
    assert issues(caught) == {("cluster_queue", "NOT_FOUND")}
    with pytest.raises(ValidationFailed) as caught:
        await world.service.create_local_queue(
            OPERATOR, cluster_id=CLUSTER, name="Bad", cluster_queue="default"
        )
    assert issues(caught) == {("name", "INVALID_NAME")}
    assert len(world.q.local_queues) == 2


async def test_removals_refused_while_in_use(world: World) -> None:
    await world.service.create_cluster_queue(OPERATOR, spec())
    await world.service.create_local_queue(
        OPERATOR, cluster_id=CLUSTER, name="team", cluster_queue="research"
    )
    job = new_job(JobStatus.QUEUED)
    job.cluster_id, job.tenant_id, job.queue_name = CLUSTER, OPERATOR.tenant_id, "team"
    world.uow.store.jobs[job.id] = job

    async def refused(command: Any, **kwargs: Any) -> str:
        with pytest.raises(Conflict) as caught:
            await command(OPERATOR, cluster_id=CLUSTER, **kwargs)
        assert caught.value.code == "IN_USE"
        return caught.value.message

    assert "job" in await refused(world.service.delete_local_queue, name="team")
    assert "local queue" in await refused(world.service.delete_cluster_queue, name="research")
    assert "cluster queue research" in await refused(world.service.delete_cohort, name="lab")
    job.status = JobStatus.COMPLETED
    await world.service.delete_local_queue(OPERATOR, cluster_id=CLUSTER, name="team")
    await world.service.delete_cluster_queue(OPERATOR, cluster_id=CLUSTER, name="research")
    await world.service.delete_cohort(OPERATOR, cluster_id=CLUSTER, name="lab")
    assert (CLUSTER, "research") not in world.q.cluster_queues
    assert world.q.cohorts == {} and world.q.local_queues == {}
    with pytest.raises(NotFound):
        await world.service.delete_local_queue(OPERATOR, cluster_id=CLUSTER, name="team")


async def test_a_tenant_makes_its_queues_but_never_changes_what_tenants_share(
    world: World,
) -> None:
    """Found from outside: tenant B set the shared ClusterQueue's quota to 0 and changed the
    global priority classes with clusters:write. A tenant's own scope (queues:write) makes its
    LocalQueues; everything shared is the operator's."""
    made = await world.service.create_local_queue(
        TENANT, cluster_id=CLUSTER, name="team", cluster_queue="default"
    )
    assert made.tenant_id == TENANT.tenant_id
    shared_changes = [
        world.service.update_cluster_queue(TENANT, spec(name="default")),
        world.service.create_cluster_queue(TENANT, spec()),
        world.service.delete_cluster_queue(TENANT, cluster_id=CLUSTER, name="default"),
        world.service.create_flavor(TENANT, cluster_id=CLUSTER, name="h100", node_labels={}),
        world.service.delete_flavor(TENANT, cluster_id=CLUSTER, name="nvidia-tesla-t4"),
        world.service.create_cohort(TENANT, CohortSpec(CLUSTER, "mine")),
        world.service.update_priority_class(TENANT, JobPriority.LOW, value=0),
    ]
    for change in shared_changes:
        with pytest.raises(Forbidden):
            await change
    with pytest.raises(Forbidden):  # and not another tenant's queue either
        await world.service.create_local_queue(
            TENANT,
            cluster_id=CLUSTER,
            name="x",
            cluster_queue="default",
            tenant_id=READER.tenant_id,
        )


async def test_a_refusal_names_only_what_its_caller_may_see(world: World) -> None:
    """Found from outside: deleteClusterQueue's refusal named another tenant's LocalQueue."""
    await world.service.create_local_queue(
        TENANT, cluster_id=CLUSTER, name="secret-team", cluster_queue="default"
    )
    await world.service.create_local_queue(
        OPERATOR, cluster_id=CLUSTER, name="ops", cluster_queue="default"
    )
    with pytest.raises(Conflict) as caught:
        await world.service.delete_cluster_queue(OPERATOR, cluster_id=CLUSTER, name="default")
    message = caught.value.message
    assert "secret-team" not in message and tenant_namespace(TENANT.tenant_id) not in message
    assert f"{tenant_namespace(OPERATOR.tenant_id)}/ops" in message
    assert "1 object of other tenants" in message
    with pytest.raises(Conflict) as caught:
        await world.service.delete_cluster_queue(ADMIN, cluster_id=CLUSTER, name="default")
    assert "secret-team" in caught.value.message  # an admin sees every tenant's


async def test_cohorts(world: World) -> None:
    with pytest.raises(Conflict):
        await world.service.create_cohort(OPERATOR, CohortSpec(CLUSTER, "lab"))
    with pytest.raises(ValidationFailed) as caught:
        await world.service.create_cohort(OPERATOR, CohortSpec(CLUSTER, "Lab", "\x00"))
    assert issues(caught) == {("name", "INVALID_NAME"), ("description", "INVALID")}
    made = await world.service.create_cohort(OPERATOR, CohortSpec(CLUSTER, "prod", "serving"))
    assert world.q.cohorts[(CLUSTER, "prod")] == made
