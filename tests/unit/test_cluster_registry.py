"""Registering and following real clusters, with fakes of every port.

Covers: registration checks every field and the kubeconfig (typed errors, nothing stored), seals
the kubeconfig bound to the cluster and queues the connect task; connecting makes the cluster
AVAILABLE with its nodes, health and default quotas, or NOT_AVAILABLE (unreachable) / ERROR
(refused) with the reason; updates (a new kubeconfig reconnects; enableMasterNode changes the
capacity); delete refused while jobs are active unless forced; following: list, watch from the
listing, heartbeats ignored, an expired watch -> list again, a failure -> NOT_AVAILABLE (kept since the
first failure, attempts counted) then AVAILABLE again; each status and node change is a cluster
event carrying the state.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pytest

from domain.backoff import backoff_seconds
from domain.errors import (
    ClusterConnectionError,
    Conflict,
    NotFound,
    SecretUnreadable,
    ValidationFailed,
)
from domain.model.cluster import Cluster, ClusterStatus, HealthCheck, Node, NodeType, Platform
from domain.model.events import ClusterChanged, ClusterChangeKind
from domain.model.ids import ClusterId, JobId, NodeId
from domain.model.job import Job, JobPriority
from domain.model.load import LoadRun
from domain.model.logs import LogLine
from domain.model.quota import QuotaSet, WorkloadPriorityClass
from domain.model.secrets import Envelope
from domain.ports.cluster_api import (
    QUOTAS_CHECK,
    KubeconfigSummary,
    MultiKueueFleet,
    NodeChange,
    QuotasApplied,
    WatchExpired,
)
from domain.ports.gateways import (
    ClusterGateway,
    GatewayUnavailable,
    PendingWorkload,
    Workload,
    WorkloadObservation,
)
from domain.services import task_names
from domain.services.clusters import ClusterService
from domain.services.jobs import JobService
from domain.services.observations import Applied, ObservationService, Reconciliation
from domain.services.quotas import QuotaService
from domain.services.registry import ClusterEdit, ClusterRegistry, Registration
from domain.services.watch import ClusterSupervisor
from tests.support.fakes import (
    FakeClock,
    FakeLease,
    FakePublisher,
    FakeTaskQueue,
    FakeUnitOfWorkFactory,
)

KUBECONFIG = "apiVersion: v1\nkind: Config\n# token: s3cr3t-token\n"
HEALTHY = [HealthCheck("api", True, "v1.30.2"), HealthCheck("kueue", True, "v0.9.1")]


class FakeSecretBox:
    """Reversible, owner-bound 'sealing' so the tests see what the registry stores."""

    active_key_id = "k1"

    def seal(self, plaintext: bytes, *, owner: str) -> Envelope:
        return Envelope("k1", 1, owner.encode(), b"n" * 12, plaintext[::-1])

    def open(self, envelope: Envelope, *, owner: str) -> bytes:
        if envelope.wrapped_key != owner.encode():
            raise SecretUnreadable("sealed for another owner")
        return envelope.ciphertext[::-1]

    def rewrap(self, envelope: Envelope) -> Envelope:
        return envelope


def node(name: str, *, gpus: int = 8, ready: bool = True, master: bool = False) -> Node:
    """A node as the cluster's connection reports it (reading Kubernetes Node objects is tested
    with the Kubernetes adapter, in test_node_inventory)."""
    labels = {"kubernetes.io/hostname": name}
    if master:
        labels["node-role.kubernetes.io/control-plane"] = ""
    return Node(
        id=NodeId(uuid.uuid4()),
        cluster_id=ClusterId(uuid.UUID(int=0)),
        name=name,
        node_type=NodeType.MASTER if master else NodeType.GPU if gpus else NodeType.WORKER,
        gpu_type="nvidia-a100-80gb" if gpus else None,
        gpu_count=gpus,
        cpu_cores=64.0,
        memory_gb=512.0,
        ready=ready,
        labels=labels,
        conditions=[{"type": "Ready", "status": "True" if ready else "False"}],
    )


@dataclass
class Script:
    """What the fake cluster does."""

    nodes: list[Node] = field(default_factory=list)
    watch: list[list[NodeChange | Exception]] = field(default_factory=list)
    connect_error: ClusterConnectionError | None = None
    list_error: ClusterConnectionError | None = None
    connects: int = 0
    calls: list[str] = field(default_factory=list)
    """"nodes" and "watch", in the order the registry asked."""
    closed: int = 0


class FakeApi:
    def __init__(self, script: Script) -> None:
        self.script = script

    async def server_version(self) -> str:
        return "v1.30.2"

    async def nodes(self) -> list[Node]:
        self.script.calls.append("nodes")
        if self.script.list_error is not None:
            raise self.script.list_error
        return list(self.script.nodes)

    async def watch_nodes(self) -> AsyncIterator[NodeChange]:
        self.script.calls.append("watch")
        if not self.script.watch:
            raise ClusterConnectionError("unreachable", "the watch broke (end of script)")
        for item in self.script.watch.pop(0):
            if isinstance(item, Exception):
                raise item
            yield item

    async def health(self) -> list[HealthCheck]:
        return list(HEALTHY)

    async def apply_quotas(
        self,
        quotas: QuotaSet,
        *,
        priority_classes: Iterable[WorkloadPriorityClass] = (),
        applied_before: Iterable[str] = (),
        multikueue: Sequence[MultiKueueFleet] = (),
        hold: bool = False,
    ) -> QuotasApplied:
        # no Kueue here: its objects are tested against the emulator
        detail = "Kueue is not installed: the cluster serves no kueue.x-k8s.io API"
        return QuotasApplied(HealthCheck(QUOTAS_CHECK, False, detail))

    async def close(self) -> None:
        self.script.closed += 1


class FakeConnector:
    def __init__(self, script: Script) -> None:
        self.script = script
        self.kubeconfigs: list[str] = []

    def inspect(self, kubeconfig: str, context: str | None) -> KubeconfigSummary:
        if "kind: Config" not in kubeconfig:
            raise ClusterConnectionError("invalid_kubeconfig", "not YAML", field="kubeconfig")
        if context == "nope":
            raise ClusterConnectionError("invalid_kubeconfig", "no context nope", field="context")
        return KubeconfigSummary(context or "default", "https://10.0.0.1:6443")

    async def connect(
        self, kubeconfig: str, context: str | None, *, cluster_id: ClusterId
    ) -> FakeApi:
        self.kubeconfigs.append(kubeconfig)
        self.script.connects += 1
        if self.script.connect_error is not None:
            raise self.script.connect_error
        return FakeApi(self.script)


@dataclass
class World:
    registry: ClusterRegistry
    uow: FakeUnitOfWorkFactory
    script: Script
    connector: FakeConnector
    tasks: FakeTaskQueue
    clock: FakeClock
    publisher: FakePublisher

    def cluster(self, cluster_id: ClusterId) -> Cluster:
        return self.uow.store.clusters[cluster_id]

    def kinds(self, cluster_id: ClusterId) -> list[tuple[ClusterChangeKind, ClusterStatus]]:
        return [
            (change.kind, change.cluster.status)
            for e in self.uow.store.events[cluster_id]
            if (change := e.cluster_change) is not None and change.cluster is not None
        ]


@pytest.fixture
def world() -> World:
    uow, clock, script, tasks, publisher = (
        FakeUnitOfWorkFactory(),
        FakeClock(),
        Script(nodes=[node("gpu-a"), node("cp", gpus=0, master=True)]),
        FakeTaskQueue(),
        FakePublisher(),
    )
    connector = FakeConnector(script)
    registry = ClusterRegistry(
        uow=uow,
        clock=clock,
        secrets=FakeSecretBox(),
        connector=connector,
        tasks=tasks,
        quotas=QuotaService(uow=uow, clock=clock),
        sync_seconds=3600,
    )
    return World(registry, uow, script, connector, tasks, clock, publisher)


def nodes_of(change: ClusterChanged) -> tuple[Node, ...]:
    """The nodes a NODES event carries."""
    assert change.cluster is not None
    return change.cluster.nodes


def registration(**overrides: Any) -> Registration:
    base: dict[str, Any] = {
        "name": "prod-east",
        "platform": Platform.ON_PREM,
        "kubeconfig": KUBECONFIG,
        "ingress_url": "https://ingress.example.com",
    }
    return Registration(**{**base, **overrides})


async def test_registration_seals_the_kubeconfig_and_queues_the_connection(world: World) -> None:
    cluster = await world.registry.register(registration())
    stored = world.cluster(cluster.id)
    assert stored.status is ClusterStatus.REGISTERING
    assert stored.configuration is not None
    assert KUBECONFIG.encode() not in stored.configuration.ciphertext  # sealed, not plain
    assert FakeSecretBox().open(stored.configuration, owner=str(cluster.id)) == KUBECONFIG.encode()
    assert (stored.server_url, stored.context) == ("https://10.0.0.1:6443", "default")
    assert [(e.task, e.kwargs) for e in world.tasks.enqueued] == [
        (task_names.CONNECT_CLUSTER, {"cluster_id": str(cluster.id)})
    ]
    assert world.kinds(cluster.id) == [(ClusterChangeKind.STATUS, ClusterStatus.REGISTERING)]
    assert "s3cr3t" not in repr(registration()) and "s3cr3t" not in repr(stored)


@pytest.mark.parametrize(
    ("overrides", "fields"),
    [
        ({"name": "Prod_East"}, {"name"}),
        ({"name": ""}, {"name"}),
        ({"kubeconfig": ""}, {"kubeconfig"}),
        ({"kubeconfig": "  \n"}, {"kubeconfig"}),
        ({"kubeconfig": "::: not yaml"}, {"kubeconfig"}),
        ({"kubeconfig": "kind: Config\n" + "x" * (1 << 20)}, {"kubeconfig"}),
        ({"context": "nope"}, {"context"}),
        ({"context": " "}, {"context"}),
        ({"ingress_url": "ftp://x"}, {"ingressUrl"}),
        ({"ingress_url": "not a url"}, {"ingressUrl"}),
        ({"platform": Platform.SIMULATED}, {"platform"}),
        (
            {"name": "-bad", "ingress_url": "x", "kubeconfig": ""},
            {"name", "ingressUrl", "kubeconfig"},
        ),
    ],
)
async def test_bad_registrations_name_each_field_and_store_nothing(
    world: World, overrides: dict[str, Any], fields: set[str]
) -> None:
    with pytest.raises(ValidationFailed) as raised:
        await world.registry.register(registration(**overrides))
    assert {i.field for i in raised.value.issues} == fields
    assert not world.uow.store.clusters and not world.tasks.enqueued


async def test_a_taken_name_is_a_conflict(world: World) -> None:
    await world.registry.register(registration())
    with pytest.raises(Conflict):
        await world.registry.register(registration())
    assert len(world.uow.store.clusters) == 1


async def test_connecting_makes_it_available_with_nodes_health_and_quotas(world: World) -> None:
    cluster = await world.registry.register(registration())
    connected = await world.registry.connect(cluster.id)
    assert connected.status is ClusterStatus.AVAILABLE and connected.reason is None
    assert world.connector.kubeconfigs == [KUBECONFIG]  # opened for the connection only
    assert [n.name for n in connected.nodes] == ["cp", "gpu-a"]
    master = next(n for n in connected.nodes if n.name == "cp")
    assert master.excluded and not master.usable  # enableMasterNode is off
    assert connected.health[:2] == tuple(HEALTHY) and connected.last_sync_at == world.clock.now()
    quotas_check = connected.health[2]  # no Kueue in this fake: the quotas can't be placed
    assert (quotas_check.name, quotas_check.ok) == ("kueue_quotas", False)
    assert "not installed" in quotas_check.detail
    assert connected.gpu_capacity() == {"nvidia-a100-80gb": 8}
    assert world.uow.store.quota.cluster_queues  # default quotas once the GPUs are known
    assert world.kinds(cluster.id)[1:] == [
        (ClusterChangeKind.NODES, ClusterStatus.REGISTERING),
        (ClusterChangeKind.STATUS, ClusterStatus.AVAILABLE),
    ]
    assert world.script.closed == 1


@pytest.mark.parametrize(
    ("kind", "status"),
    [
        ("unreachable", ClusterStatus.NOT_AVAILABLE),
        ("unauthorized", ClusterStatus.ERROR),
        ("forbidden", ClusterStatus.ERROR),
        ("invalid_kubeconfig", ClusterStatus.ERROR),
    ],
)
async def test_a_failed_connection_says_why(world: World, kind: str, status: ClusterStatus) -> None:
    cluster = await world.registry.register(registration())
    world.script.connect_error = ClusterConnectionError(kind, f"{kind} at https://10.0.0.1:6443")
    failed = await world.registry.connect(cluster.id)
    assert failed.status is status and failed.reason == f"{kind} at https://10.0.0.1:6443"
    assert failed.retry_attempt == 1 and failed.last_retry_time == world.clock.now()
    assert (failed.not_available_since is not None) == (status is ClusterStatus.NOT_AVAILABLE)
    assert not failed.nodes


async def test_a_kubeconfig_sealed_for_another_cluster_does_not_open(world: World) -> None:
    first = await world.registry.register(registration())
    second = await world.registry.register(registration(name="prod-west"))
    world.cluster(second.id).configuration = world.cluster(first.id).configuration
    failed = await world.registry.connect(second.id)
    assert failed.status is ClusterStatus.ERROR
    assert failed.reason is not None and "can't be opened" in failed.reason
    assert world.connector.kubeconfigs == []


async def test_a_new_kubeconfig_connects_again(world: World) -> None:
    cluster = await world.registry.register(registration())
    await world.registry.connect(cluster.id)
    world.tasks.enqueued.clear()
    new = KUBECONFIG + "# rotated\n"
    updated = await world.registry.update(cluster.id, ClusterEdit(kubeconfig=new))
    assert updated.status is ClusterStatus.REGISTERING
    assert world.tasks.names() == [task_names.CONNECT_CLUSTER]
    await world.registry.connect(cluster.id)
    assert world.connector.kubeconfigs[-1] == new


async def test_update_checks_its_fields_and_changes_nothing_when_wrong(world: World) -> None:
    cluster = await world.registry.register(registration())
    before = world.cluster(cluster.id).configuration
    with pytest.raises(ValidationFailed) as raised:
        await world.registry.update(
            cluster.id, ClusterEdit(name="Bad Name", kubeconfig="nope", ingress_url="x")
        )
    assert {i.field for i in raised.value.issues} == {"name", "kubeconfig", "ingressUrl"}
    assert world.cluster(cluster.id).name == "prod-east"
    assert world.cluster(cluster.id).configuration == before
    with pytest.raises(NotFound):
        await world.registry.update(ClusterId(uuid.uuid4()), ClusterEdit(name="x"))


async def test_enabling_master_nodes_counts_them(world: World) -> None:
    world.script.nodes = [node("gpu-a"), node("cp", gpus=2, master=True)]
    cluster = await world.registry.register(registration())
    await world.registry.connect(cluster.id)
    assert world.cluster(cluster.id).gpu_capacity() == {"nvidia-a100-80gb": 8}
    await world.registry.update(cluster.id, ClusterEdit(enable_master_node=True))
    assert world.cluster(cluster.id).gpu_capacity() == {"nvidia-a100-80gb": 10}
    assert world.kinds(cluster.id)[-1][0] is ClusterChangeKind.NODES


async def test_delete_is_refused_while_jobs_are_active_unless_forced(world: World) -> None:
    from dataclasses import replace

    from tests.unit.test_job_model import new_job

    cluster = await world.registry.register(registration())
    job = replace(new_job(), cluster_id=cluster.id)  # PENDING: active
    world.uow.store.jobs[job.id] = job
    with pytest.raises(Conflict) as raised:
        await world.registry.delete(cluster.id)
    assert raised.value.code == "CLUSTER_IN_USE" and cluster.id in world.uow.store.clusters
    gone = await world.registry.delete(cluster.id, force=True)
    assert gone.status is ClusterStatus.DELETING
    assert cluster.id not in world.uow.store.clusters and job.id not in world.uow.store.jobs


async def test_following_lists_then_watches_and_ignores_heartbeats(world: World) -> None:
    cluster = await world.registry.register(registration())
    world.script.watch = [
        [
            NodeChange("gpu-a", node("gpu-a")),  # a heartbeat: nothing changes
            NodeChange("gpu-b", node("gpu-b")),
            NodeChange("gpu-a", node("gpu-a", ready=False)),
            NodeChange("cp", None),
        ],
        [WatchExpired()],  # the watch can't go on: list again
    ]
    with pytest.raises(GatewayUnavailable):
        await world.registry.follow(cluster.id)
    # the watch goes on after the first batch ends; after it expired, a new listing comes first
    assert world.script.calls == ["nodes", "watch", "watch", "nodes", "watch"]
    after = world.cluster(cluster.id)
    assert after.status is ClusterStatus.NOT_AVAILABLE  # the script's end: the watch broke
    seen = [
        {n.name: n.ready for n in nodes_of(e.cluster_change)}
        for e in world.uow.store.events[cluster.id]
        if e.cluster_change is not None and e.cluster_change.kind is ClusterChangeKind.NODES
    ]
    assert seen == [
        {"cp": True, "gpu-a": True},  # listed
        {"cp": True, "gpu-a": True, "gpu-b": True},  # added (the heartbeat before: nothing)
        {"cp": True, "gpu-a": False, "gpu-b": True},
        {"gpu-a": False, "gpu-b": True},  # deleted
        {"cp": True, "gpu-a": True},  # listed again after the watch expired
    ]
    assert world.script.closed == 1


async def test_unreachable_then_back_again(world: World) -> None:
    cluster = await world.registry.register(registration())
    await world.registry.connect(cluster.id)
    world.script.list_error = ClusterConnectionError("unreachable", "connection refused")
    for _ in range(3):
        world.clock.advance(30)
        with pytest.raises(GatewayUnavailable):
            await world.registry.follow(cluster.id)
    down = world.cluster(cluster.id)
    first_failure = down.not_available_since
    assert down.status is ClusterStatus.NOT_AVAILABLE and down.retry_attempt == 3
    assert first_failure is not None and first_failure < world.clock.now()
    world.script.list_error = None
    world.script.watch = [[WatchExpired()]]
    with pytest.raises(GatewayUnavailable):  # back, then the scripted watch ends it again
        await world.registry.follow(cluster.id)
    statuses = [s for k, s in world.kinds(cluster.id) if k is ClusterChangeKind.STATUS]
    assert statuses == [
        ClusterStatus.REGISTERING,
        ClusterStatus.AVAILABLE,
        ClusterStatus.NOT_AVAILABLE,
        ClusterStatus.AVAILABLE,
        ClusterStatus.NOT_AVAILABLE,
    ]
    assert world.cluster(cluster.id).retry_attempt == 1  # counted from the recovery


class QuietGateways:
    """A real cluster's job gateway with no jobs, whose watch says every second that it lives."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock

    def for_cluster(self, cluster: Cluster) -> QuietGateways:
        return self

    async def submit(self, workload: Workload) -> None:
        raise AssertionError("no jobs here")

    async def cancel(self, job_id: JobId, attempt: int) -> None:
        raise AssertionError("no jobs here")

    async def evict(self, job_id: JobId, attempt: int, *, grace_seconds: int) -> None:
        raise AssertionError("no jobs here")

    async def drain_node(self, node: str) -> list[str]:
        return []

    async def logs(
        self,
        job_id: JobId,
        attempt: int,
        *,
        pod: str | None = None,
        since: datetime | None = None,
        tail: int | None = None,
    ) -> list[LogLine]:
        return []

    async def undrain_node(self, node: str) -> None:
        return None

    async def set_priority(self, job_id: JobId, attempt: int, priority: JobPriority) -> None:
        raise AssertionError("no jobs here")

    async def nodes(self) -> list[Node]:
        return []

    async def list_workloads(self) -> list[WorkloadObservation]:
        return []

    async def watch(self) -> AsyncIterator[list[WorkloadObservation]]:
        while True:
            await self.clock.sleep(1)
            yield []

    async def workload_exited(
        self, job_id: JobId, attempt: int, *, succeeded: bool, reason: str
    ) -> bool:
        return False

    async def pending_in_queue(self, namespace: str, queue: str) -> list[PendingWorkload] | None:
        return None

    async def benchmark_run(self, job_id: JobId, attempt: int) -> LoadRun | None:
        return None


class QuietObservations(ObservationService):
    """Nothing to apply and nothing lost: the job side of a cluster with no jobs."""

    async def apply(self, obs: WorkloadObservation) -> Job | None:
        raise AssertionError("a quiet gateway observes nothing")

    async def strays(
        self, listed: Sequence[WorkloadObservation], *, cluster_id: ClusterId | None = None
    ) -> list[WorkloadObservation]:
        assert listed == []
        return []

    async def apply_batch(
        self, observations: Sequence[WorkloadObservation], *, cluster_id: ClusterId | None = None
    ) -> Applied:
        assert not observations, "a quiet gateway observes nothing"
        return Applied()

    async def reconcile_listing(
        self,
        cluster_id: ClusterId,
        listed: Sequence[WorkloadObservation],
        gateway: ClusterGateway,
    ) -> Reconciliation:
        assert listed == []
        return Reconciliation()


async def test_the_supervisor_backs_off_while_down_and_starts_over_once_back(
    world: World,
) -> None:
    """Unreachable -> retries at growing, capped steps (the backoff is given the number of
    failures in a row, which the registry stores); back -> AVAILABLE; the next outage starts
    from the first step again."""
    cluster = await world.registry.register(registration())
    await world.registry.connect(cluster.id)
    world.script.connect_error = ClusterConnectionError("unreachable", "connection refused")
    steps: list[int] = []
    delays: list[float] = []
    recovered = asyncio.Event()

    def backoff(attempt: int) -> float:
        steps.append(attempt)
        if len(steps) == 4:  # three failures in a row: the API server answers again
            world.script.connect_error = None
        if len(steps) == 5:  # it answered, then its watch broke once: enough
            recovered.set()
        delays.append(backoff_seconds(attempt, uniform=lambda low, high: high))
        return delays[-1]

    quotas = QuotaService(uow=world.uow, clock=world.clock)
    jobs = JobService(uow=world.uow, clock=world.clock, tasks=world.tasks)
    sup = ClusterSupervisor(  # no jobs: the nodes matter here
        clusters=ClusterService(
            uow=world.uow, clock=world.clock, gateways=QuietGateways(world.clock), quotas=quotas
        ),
        jobs=jobs,
        observations=QuietObservations(uow=world.uow, clock=world.clock, jobs=jobs),
        gateways=QuietGateways(world.clock),
        lease=FakeLease(),
        clock=world.clock,
        backoff=backoff,
        registry=world.registry,
    )
    world.clock.manual = True  # the renewer, the watch and the backoff sleep side by side
    watch = asyncio.create_task(sup._watch(world.cluster(cluster.id)))
    try:
        for _ in range(300):  # a few minutes of the clock's time at most
            if recovered.is_set():
                break
            await world.clock.run_for(1, step=0.5)
        assert recovered.is_set()
    finally:
        watch.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watch
    assert steps == [1, 2, 3, 4, 1]
    assert delays == [5.0, 10.0, 20.0, 40.0, 5.0]
    assert all(d in world.clock.slept for d in delays)  # and the supervisor waited them
    assert backoff_seconds(9, uniform=lambda low, high: high) == 300.0  # the cap
    statuses = [s for k, s in world.kinds(cluster.id) if k is ClusterChangeKind.STATUS]
    assert statuses[-3:] == [
        ClusterStatus.NOT_AVAILABLE,
        ClusterStatus.AVAILABLE,
        ClusterStatus.NOT_AVAILABLE,
    ]
    down = world.cluster(cluster.id)
    assert down.retry_attempt == 1 and down.not_available_since == down.last_retry_time
