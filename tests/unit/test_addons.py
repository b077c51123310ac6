"""Cluster add-ons in the domain, with fakes: the pinned charts and where Helm is told to take them
from (a chart's own repository, an https mirror or an oci:// one); versions parsed and judged
against the supported ranges (the `versions` warning); the operator's request (who may ask, what
input is refused naming the field, the mirror through the outbound policy, what health finds is
left alone, a need asked for with what needs it, refusals on unsupported Kubernetes and Kueue, a
simulated cluster answering that everything is built in); and the task (waits while the cluster
connects, installs the pinned release with its namespace, FOUND when health finds it meanwhile,
FAILED with Helm's reason, retried when Helm can't be reached, stale requests left alone)."""

from __future__ import annotations

import uuid
from dataclasses import replace

import pytest

from domain.errors import Conflict, Forbidden, NotFound, ValidationFailed
from domain.model.addons import (
    CHARTS,
    KUBERNETES_SUPPORTED,
    KUEUE_SUPPORTED,
    Addon,
    AddonInstall,
    AddonOrigin,
    AddonState,
    ClusterAddon,
    VersionRange,
    parse_version,
    versions_check,
    views,
)
from domain.model.cluster import Cluster, ClusterStatus, HealthCheck, Platform
from domain.model.ids import ClusterId, TenantId
from domain.model.job import JobStatus
from domain.model.principal import Principal, Scope
from domain.ports.gateways import GatewayUnavailable
from domain.ports.helm import ReleaseInfo, ReleaseRejected, ReleaseSpec
from domain.ports.tasks import RetryTask
from domain.services import task_names
from domain.services.addons import ABANDONED_AFTER, INSTALL_TRIES, AddonService
from domain.services.destinations import Destinations
from tests.support.fakes import (
    T0,
    FakeClock,
    FakeOutboundPolicy,
    FakeTaskQueue,
    FakeUnitOfWorkFactory,
    install_cluster,
    make_cluster,
)
from tests.unit.test_job_model import new_job

OPERATOR = Principal(TenantId(uuid.uuid4()), frozenset({Scope.CLUSTERS_WRITE}))
TENANT = Principal(TenantId(uuid.uuid4()), frozenset({Scope.CLUSTERS_READ, Scope.JOBS_WRITE}))
MIRROR_HOSTS = {"charts.example.com": ["93.184.216.34"], "intranet.example.com": ["10.0.0.8"]}


def health(
    k8s: str = "v1.30.2", *, kueue: str | None = None, nfd: bool = False, gpu: bool = False
) -> tuple[HealthCheck, ...]:
    return (
        HealthCheck("api", True, f"reachable, Kubernetes {k8s}", version=k8s),
        HealthCheck("nfd", nfd, "feature labels on 1 of 1 nodes" if nfd else "not installed"),
        HealthCheck(
            "kueue", kueue is not None, "installed" if kueue else "not installed", version=kueue
        ),
        HealthCheck("gpu_operator", gpu, "installed" if gpu else "not installed"),
    )


class FakeReleases:
    """HelmReleases that record what they are asked to install or uninstall, or fail as told."""

    def __init__(self) -> None:
        self.installed: list[ReleaseSpec] = []
        self.uninstalled: list[tuple[str, str]] = []
        self.failure: Exception | None = None

    async def install(self, release: ReleaseSpec) -> None:
        if self.failure is not None:
            raise self.failure
        self.installed.append(release)

    async def uninstall(self, name: str, namespace: str) -> None:
        if self.failure is not None:
            raise self.failure
        self.uninstalled.append((name, namespace))

    async def releases(self) -> list[ReleaseInfo]:
        return []


class World:
    def __init__(
        self, *, k8s: str = "v1.30.2", kueue: str | None = None, real: bool = True
    ) -> None:
        self.uow = FakeUnitOfWorkFactory()
        self.clock = FakeClock(T0)
        self.tasks = FakeTaskQueue()
        self.outbound = FakeOutboundPolicy(hosts=MIRROR_HOSTS)
        self.helm = FakeReleases()
        self.connected: list[ClusterId] = []
        cluster = make_cluster(ClusterId(uuid.uuid4()))
        if real:
            cluster.platform = Platform.ON_PREM
            cluster.health, cluster.health_checked_at = health(k8s, kueue=kueue), T0
        self.cluster = install_cluster(self.uow.store, cluster)
        self.service = AddonService(
            uow=self.uow,
            clock=self.clock,
            tasks=self.tasks,
            destinations=Destinations(uow=self.uow, outbound=self.outbound),
            releases=lambda _: self.helm,
            health_changed=self._connect,
            backoff=lambda attempt: 7.0 * attempt,
        )

    async def _connect(self, cluster_id: ClusterId) -> None:
        self.connected.append(cluster_id)

    @property
    def id(self) -> ClusterId:
        return self.cluster.id

    async def installs(self) -> list[AddonInstall]:
        return (await self.service.installs([self.id])).get(self.id, [])

    def states(self) -> dict[Addon, AddonState]:
        return {a: i.state for (c, a), i in self.uow.store.addons.items() if c == self.id}

    async def run_tasks(self, *, try_number: int = 1) -> list[AddonState | None]:
        done = []
        for queued in self.tasks.enqueued:
            assert queued.task == task_names.INSTALL_ADDON
            done.append(
                await self.service.install(
                    ClusterId(uuid.UUID(queued.kwargs["cluster_id"])),
                    Addon(queued.kwargs["addon"]),
                    queued.kwargs["request_id"],
                    try_number=try_number,
                )
            )
        return done


# --- the pinned charts and the supported ranges ----------------------------------------------


def test_each_addon_has_its_pinned_chart_from_its_public_repository() -> None:
    coordinates = {a: (c.reference(), c.version, c.namespace, c.release) for a, c in CHARTS.items()}
    assert coordinates == {
        Addon.KUEUE: (
            ("oci://registry.k8s.io/kueue/charts/kueue", None),
            "0.19.2",
            "kueue-system",
            "kueue",
        ),
        Addon.NODE_FEATURE_DISCOVERY: (
            (
                "node-feature-discovery",
                "https://kubernetes-sigs.github.io/node-feature-discovery/charts",
            ),
            "0.19.0",
            "node-feature-discovery",
            "nfd",
        ),
        Addon.GPU_OPERATOR: (
            ("gpu-operator", "https://helm.ngc.nvidia.com/nvidia"),
            "v26.7.0",
            "gpu-operator",
            "gpu-operator",
        ),
    }


def test_a_mirror_holds_the_same_charts_under_their_names() -> None:
    kueue, nfd = CHARTS[Addon.KUEUE], CHARTS[Addon.NODE_FEATURE_DISCOVERY]
    assert kueue.reference("https://charts.example.com/helm/") == (
        "kueue",
        "https://charts.example.com/helm",
    )
    assert nfd.reference("oci://registry.example.com/charts") == (
        "oci://registry.example.com/charts/node-feature-discovery",
        None,
    )


@pytest.mark.parametrize(
    ("text", "version"),
    [
        ("v1.30.2", (1, 30, 2)),
        ("v1.29.3+k3s1", (1, 29, 3)),
        ("v1.31.0-eks-4f2a1b", (1, 31, 0)),
        ("0.19", (0, 19, 0)),
        ("latest", None),
        (None, None),
    ],
)
def test_versions_are_read_as_kubernetes_and_kueue_write_them(
    text: str | None, version: tuple[int, int, int] | None
) -> None:
    assert parse_version(text) == version


def test_the_supported_ranges_include_every_patch_of_their_newest_minor() -> None:
    assert str(KUBERNETES_SUPPORTED) == "1.29 to 1.36"
    assert str(KUEUE_SUPPORTED) == "0.13 to 0.20"
    assert KUBERNETES_SUPPORTED.holds((1, 36, 9)) and not KUBERNETES_SUPPORTED.holds((1, 37, 0))
    assert not KUBERNETES_SUPPORTED.holds((1, 28, 15))
    assert VersionRange((1, 24)).holds((2, 0, 0))


def test_versions_outside_the_ranges_are_a_warning() -> None:
    assert versions_check("v1.30.2", "v0.19.2") == HealthCheck(
        "versions", True, "Kubernetes v1.30.2, Kueue v0.19.2: supported"
    )
    warned = versions_check("v1.27.3", "v0.11.0")
    assert (warned.ok, warned.warning) == (False, True)
    assert warned.detail == (
        "Kubernetes v1.27.3 is outside the supported 1.29 to 1.36; "
        "Kueue v0.11.0 is outside the supported 0.13 to 0.20"
    )
    assert versions_check(None, None).ok  # nothing read: nothing to warn of


# --- the request -----------------------------------------------------------------------------


async def test_the_operator_asks_and_a_task_is_queued_per_missing_addon() -> None:
    world = World(kueue="v0.19.2")

    await world.service.request(OPERATOR, world.id, [Addon.KUEUE, Addon.GPU_OPERATOR])

    # Kueue is there (FOUND, nothing stored); the GPU Operator brings NFD, which goes first
    assert world.states() == {
        Addon.NODE_FEATURE_DISCOVERY: AddonState.REQUESTED,
        Addon.GPU_OPERATOR: AddonState.REQUESTED,
    }
    assert [q.kwargs["addon"] for q in world.tasks.enqueued] == [
        "NODE_FEATURE_DISCOVERY",
        "GPU_OPERATOR",
    ]
    found = {
        v.chart.addon: (v.state, v.origin, v.version)
        for v in views(world.cluster.health, await world.installs())
    }
    assert found[Addon.KUEUE] == (AddonState.INSTALLED, AddonOrigin.FOUND, "v0.19.2")
    assert found[Addon.GPU_OPERATOR] == (AddonState.REQUESTED, AddonOrigin.HELM, "v26.7.0")


async def test_asking_again_for_what_is_on_its_way_queues_nothing_more() -> None:
    world = World()
    await world.service.request(OPERATOR, world.id, [Addon.KUEUE])
    await world.service.request(OPERATOR, world.id, [Addon.KUEUE])
    assert len(world.tasks.enqueued) == 1


async def test_asking_again_replaces_a_request_whose_task_is_gone() -> None:
    world = World()
    await world.service.request(OPERATOR, world.id, [Addon.KUEUE])
    first = world.uow.store.addons[(world.id, Addon.KUEUE)].request_id
    world.clock.advance(ABANDONED_AFTER.total_seconds())  # not yet: its task may still run
    await world.service.request(OPERATOR, world.id, [Addon.KUEUE])
    assert len(world.tasks.enqueued) == 1

    world.clock.advance(1)  # the task was lost (never queued, or its worker died): asked anew
    await world.service.request(OPERATOR, world.id, [Addon.KUEUE])
    replaced = world.uow.store.addons[(world.id, Addon.KUEUE)]
    assert replaced.request_id != first and replaced.state is AddonState.REQUESTED
    assert [q.kwargs["request_id"] for q in world.tasks.enqueued] == [first, replaced.request_id]
    assert await world.run_tasks() == [None, AddonState.INSTALLED]  # the lost one does nothing
    assert len(world.helm.installed) == 1


async def test_only_the_operator_may_ask() -> None:
    world = World()
    with pytest.raises(Forbidden):
        await world.service.request(TENANT, world.id, [Addon.KUEUE])
    assert world.states() == {} and world.tasks.enqueued == []


@pytest.mark.parametrize(
    ("addons", "mirror", "field", "code"),
    [
        ([], None, "addons", "REQUIRED"),
        ([Addon.KUEUE, Addon.KUEUE], None, "addons", "DUPLICATE"),
        ([Addon.KUEUE], "http://charts.example.com/helm", "mirror", "FORBIDDEN_ENDPOINT"),
        ([Addon.KUEUE], "https://intranet.example.com/helm", "mirror", "FORBIDDEN_ENDPOINT"),
        ([Addon.KUEUE], "https://nowhere.example.com/helm", "mirror", "FORBIDDEN_ENDPOINT"),
        ([Addon.KUEUE], "oci://169.254.169.254/charts", "mirror", "FORBIDDEN_ENDPOINT"),
    ],
)
async def test_bad_input_is_refused_naming_the_field(
    addons: list[Addon], mirror: str | None, field: str, code: str
) -> None:
    world = World()
    with pytest.raises(ValidationFailed) as refused:
        await world.service.request(OPERATOR, world.id, addons, mirror)
    assert [(i.field, i.code) for i in refused.value.issues] == [(field, code)]
    assert world.states() == {} and world.tasks.enqueued == []


async def test_a_public_mirror_is_where_the_chart_is_taken_from() -> None:
    world = World()
    await world.service.request(
        OPERATOR, world.id, [Addon.KUEUE], "oci://charts.example.com/mirror"
    )
    assert world.outbound.checked == ["oci://charts.example.com/mirror"]

    assert await world.run_tasks() == [AddonState.INSTALLED]
    assert [(r.chart, r.repo, r.version) for r in world.helm.installed] == [
        ("oci://charts.example.com/mirror/kueue", None, "0.19.2")
    ]


async def test_an_unknown_cluster_is_not_found() -> None:
    world = World()
    with pytest.raises(NotFound):
        await world.service.request(OPERATOR, ClusterId(uuid.uuid4()), [Addon.KUEUE])


async def test_kueue_is_refused_on_a_kubernetes_it_does_not_support() -> None:
    world = World(k8s="v1.27.3")
    with pytest.raises(ValidationFailed) as refused:
        await world.service.request(OPERATOR, world.id, [Addon.NODE_FEATURE_DISCOVERY, Addon.KUEUE])
    assert [(i.field, i.code) for i in refused.value.issues] == [
        ("addons.1", "UNSUPPORTED_VERSION")
    ]
    assert "Kueue v0.19.2 supports Kubernetes 1.29 to 1.36; the cluster runs 1.27.3" in (
        refused.value.issues[0].message
    )
    assert world.states() == {}  # nothing of the request is stored


async def test_an_unsupported_kueue_found_is_refused_not_replaced() -> None:
    world = World(kueue="v0.11.0")
    with pytest.raises(ValidationFailed) as refused:
        await world.service.request(OPERATOR, world.id, [Addon.KUEUE])
    assert refused.value.issues[0].field == "addons.0"
    assert "Kueue v0.11.0 is installed, outside the supported 0.13 to 0.20" in (
        refused.value.issues[0].message
    )
    # what does not need Kueue is installed all the same
    await world.service.request(OPERATOR, world.id, [Addon.NODE_FEATURE_DISCOVERY])
    assert world.states() == {Addon.NODE_FEATURE_DISCOVERY: AddonState.REQUESTED}


async def test_a_simulated_cluster_has_everything_built_in() -> None:
    world = World(real=False)

    cluster = await world.service.request(OPERATOR, world.id, list(Addon))

    assert world.states() == {} and world.tasks.enqueued == [] and world.helm.installed == []
    assert {(v.state, v.origin) for v in views(cluster.health, [], simulated=True)} == {
        (AddonState.INSTALLED, AddonOrigin.BUILT_IN)
    }


# --- the task --------------------------------------------------------------------------------


async def test_the_task_installs_the_pinned_release_in_its_namespace() -> None:
    world = World()
    await world.service.request(OPERATOR, world.id, [Addon.GPU_OPERATOR])

    assert await world.run_tasks() == [AddonState.INSTALLED, AddonState.INSTALLED]

    assert world.helm.installed == [
        ReleaseSpec(
            name="nfd",
            namespace="node-feature-discovery",
            chart="node-feature-discovery",
            repo="https://kubernetes-sigs.github.io/node-feature-discovery/charts",
            version="0.19.0",
            create_namespace=True,
        ),
        ReleaseSpec(
            name="gpu-operator",
            namespace="gpu-operator",
            chart="gpu-operator",
            values={"nfd": {"enabled": False}},
            repo="https://helm.ngc.nvidia.com/nvidia",
            version="v26.7.0",
            create_namespace=True,
        ),
    ]
    assert world.connected == [world.id, world.id]  # health is read again after each
    assert world.states() == {
        Addon.NODE_FEATURE_DISCOVERY: AddonState.INSTALLED,
        Addon.GPU_OPERATOR: AddonState.INSTALLED,
    }


async def test_a_chart_helm_refuses_fails_with_its_reason() -> None:
    world = World()
    await world.service.request(OPERATOR, world.id, [Addon.KUEUE])
    world.helm.failure = ReleaseRejected('chart "kueue" version "0.19.2" not found')

    assert await world.run_tasks() == [AddonState.FAILED]
    install = world.uow.store.addons[(world.id, Addon.KUEUE)]
    assert install.reason == 'chart "kueue" version "0.19.2" not found'

    world.helm.failure, world.tasks.enqueued = None, []  # asked again, it is tried again
    await world.service.request(OPERATOR, world.id, [Addon.KUEUE])
    assert await world.run_tasks() == [AddonState.INSTALLED]


async def test_helm_out_of_reach_is_retried_then_failed() -> None:
    world = World()
    await world.service.request(OPERATOR, world.id, [Addon.KUEUE])
    world.helm.failure = GatewayUnavailable("Kubernetes cluster unreachable")

    with pytest.raises(RetryTask) as retried:
        await world.run_tasks(try_number=2)
    assert retried.value.defer_seconds == 14.0
    assert world.states() == {Addon.KUEUE: AddonState.INSTALLING}

    assert await world.run_tasks(try_number=INSTALL_TRIES) == [AddonState.FAILED]
    assert world.uow.store.addons[(world.id, Addon.KUEUE)].reason == (
        "Kubernetes cluster unreachable"
    )


async def test_the_task_waits_while_the_cluster_connects() -> None:
    world = World()
    world.uow.store.clusters[world.id] = replace(
        world.cluster, status=ClusterStatus.REGISTERING, health=(), health_checked_at=None
    )
    await world.service.request(OPERATOR, world.id, [Addon.KUEUE])

    with pytest.raises(RetryTask):
        await world.run_tasks()
    assert world.helm.installed == []
    assert await world.run_tasks(try_number=INSTALL_TRIES) == [AddonState.FAILED]


async def test_the_task_finds_what_came_meanwhile_and_installs_nothing() -> None:
    world = World()
    await world.service.request(OPERATOR, world.id, [Addon.KUEUE])
    stored: Cluster = world.uow.store.clusters[world.id]
    stored.health = health(kueue="v0.18.1")

    assert await world.run_tasks() == [AddonState.INSTALLED]
    install = world.uow.store.addons[(world.id, Addon.KUEUE)]
    assert (install.origin, world.helm.installed) == (AddonOrigin.FOUND, [])


async def test_a_replaced_request_leaves_its_task_with_nothing_to_do() -> None:
    world = World()
    await world.service.request(OPERATOR, world.id, [Addon.KUEUE])
    install = world.uow.store.addons[(world.id, Addon.KUEUE)]
    world.uow.store.addons[(world.id, Addon.KUEUE)] = replace(install, request_id="newer")

    assert await world.run_tasks() == [None]
    assert world.helm.installed == []


# --- upgrades of budcluster's own releases ---------------------------------------------------


def installed_before(world: World, addon: Addon, version: str, origin: AddonOrigin) -> None:
    """A release an earlier budcluster installed (its pin then: `version`), or one it found."""
    world.uow.store.addons[(world.id, addon)] = AddonInstall(
        cluster_id=world.id,
        addon=addon,
        state=AddonState.INSTALLED,
        request_id="earlier",
        requested_at=T0,
        requested_by="token:earlier",
        updated_at=T0,
        chart_version=version,
        repository=CHARTS[addon].repository,
        origin=origin,
    )


async def view_of(world: World, addon: Addon) -> ClusterAddon:
    [found] = [
        v for v in views(world.cluster.health, await world.installs()) if v.chart.addon is addon
    ]
    return found


@pytest.mark.parametrize("kueue", ["v0.18.0", "v0.12.1"])  # the second: outside the range
async def test_budclusters_own_release_at_an_earlier_pin_is_upgraded_in_place(kueue: str) -> None:
    world = World(kueue=kueue)
    installed_before(world, Addon.KUEUE, kueue.removeprefix("v"), AddonOrigin.HELM)
    before = await view_of(world, Addon.KUEUE)
    assert (before.state, before.version, before.upgrade_to) == (
        AddonState.INSTALLED,
        kueue.removeprefix("v"),
        "0.19.2",
    )

    await world.service.request(OPERATOR, world.id, [Addon.KUEUE])  # not refused: its own
    asked = await view_of(world, Addon.KUEUE)
    assert (asked.state, asked.version, asked.upgrading_from, asked.upgrade_to) == (
        AddonState.REQUESTED,
        kueue.removeprefix("v"),  # what still runs
        kueue.removeprefix("v"),
        None,
    )
    assert await world.run_tasks() == [AddonState.INSTALLED]  # though health finds it there
    [release] = world.helm.installed
    assert (release.name, release.version, release.upgrade) == ("kueue", "0.19.2", True)
    done = await view_of(world, Addon.KUEUE)
    assert (done.state, done.origin, done.version, done.upgrade_to, done.upgrading_from) == (
        AddonState.INSTALLED,
        AddonOrigin.HELM,
        "0.19.2",
        None,
        None,
    )
    await world.service.request(OPERATOR, world.id, [Addon.KUEUE])  # at the pin: nothing
    assert len(world.tasks.enqueued) == 1


async def test_a_failed_upgrade_says_what_still_runs_and_is_tried_again_when_asked() -> None:
    world = World(kueue="v0.18.0")
    installed_before(world, Addon.KUEUE, "0.18.0", AddonOrigin.HELM)
    await world.service.request(OPERATOR, world.id, [Addon.KUEUE])
    world.helm.failure = ReleaseRejected("UPGRADE FAILED: a webhook refused it")
    assert await world.run_tasks() == [AddonState.FAILED]
    failed = await view_of(world, Addon.KUEUE)
    assert (failed.state, failed.version, failed.upgrading_from, failed.upgrade_to) == (
        AddonState.FAILED,
        "0.18.0",
        "0.18.0",
        "0.19.2",
    )

    world.helm.failure, world.tasks.enqueued = None, []
    await world.service.request(OPERATOR, world.id, [Addon.KUEUE])
    assert world.uow.store.addons[(world.id, Addon.KUEUE)].upgrade_from == "0.18.0"
    assert await world.run_tasks() == [AddonState.INSTALLED]
    assert [r.upgrade for r in world.helm.installed] == [True]


async def test_a_release_budcluster_did_not_install_is_never_upgraded() -> None:
    world = World(kueue="v0.18.0")
    installed_before(world, Addon.KUEUE, "0.18.0", AddonOrigin.FOUND)
    assert (await view_of(world, Addon.KUEUE)).upgrade_to is None
    await world.service.request(OPERATOR, world.id, [Addon.KUEUE])
    assert world.tasks.enqueued == [] and world.helm.installed == []


# --- removal ---------------------------------------------------------------------------------


async def test_budclusters_own_release_is_uninstalled_and_then_missing() -> None:
    world = World()
    installed_before(world, Addon.NODE_FEATURE_DISCOVERY, "0.19.0", AddonOrigin.HELM)

    await world.service.remove(OPERATOR, world.id, [Addon.NODE_FEATURE_DISCOVERY])
    assert world.states() == {Addon.NODE_FEATURE_DISCOVERY: AddonState.REMOVING}
    assert (await view_of(world, Addon.NODE_FEATURE_DISCOVERY)).state is AddonState.REMOVING
    assert await world.run_tasks() == [AddonState.MISSING]
    assert world.helm.uninstalled == [("nfd", "node-feature-discovery")]
    assert world.states() == {} and world.connected == [world.id]  # health read again
    assert (await view_of(world, Addon.NODE_FEATURE_DISCOVERY)).state is AddonState.MISSING


async def test_removal_refusals_name_the_field_and_change_nothing() -> None:
    world = World(kueue="v0.19.2")  # Kueue FOUND: not budcluster's
    installed_before(world, Addon.NODE_FEATURE_DISCOVERY, "0.19.0", AddonOrigin.HELM)
    installed_before(world, Addon.GPU_OPERATOR, "v26.7.0", AddonOrigin.HELM)

    with pytest.raises(ValidationFailed) as refused:
        await world.service.remove(OPERATOR, world.id, [Addon.KUEUE, Addon.NODE_FEATURE_DISCOVERY])
    assert [(i.field, i.code) for i in refused.value.issues] == [
        ("addons.0", "NOT_INSTALLED_BY_BUDCLUSTER"),
        ("addons.1", "NEEDED"),  # budcluster's GPU Operator needs it
    ]
    assert world.tasks.enqueued == [] and set(world.states().values()) == {AddonState.INSTALLED}
    with pytest.raises(Forbidden):
        await world.service.remove(
            Principal(TenantId(uuid.uuid4()), frozenset({Scope.JOBS_WRITE})),
            world.id,
            [Addon.GPU_OPERATOR],
        )

    # both together: NFD's need goes with it
    await world.service.remove(
        OPERATOR, world.id, [Addon.GPU_OPERATOR, Addon.NODE_FEATURE_DISCOVERY]
    )
    assert set(world.states().values()) == {AddonState.REMOVING}
    with pytest.raises(ValidationFailed) as again:  # installing while it is being removed
        await world.service.request(OPERATOR, world.id, [Addon.NODE_FEATURE_DISCOVERY])
    assert [(i.field, i.code) for i in again.value.issues] == [("addons.0", "IN_PROGRESS")]


async def test_kueue_and_the_gpu_operator_stay_while_jobs_are_active() -> None:
    world = World()
    installed_before(world, Addon.KUEUE, "0.19.2", AddonOrigin.HELM)
    job = replace(new_job(JobStatus.RUNNING), cluster_id=world.id)
    world.uow.store.jobs[job.id] = job

    with pytest.raises(Conflict, match="1 jobs are active") as refused:
        await world.service.remove(OPERATOR, world.id, [Addon.KUEUE])
    assert refused.value.code == "IN_USE" and world.tasks.enqueued == []

    world.uow.store.jobs[job.id] = replace(job, status=JobStatus.COMPLETED)
    await world.service.remove(OPERATOR, world.id, [Addon.KUEUE])
    assert world.states() == {Addon.KUEUE: AddonState.REMOVING}


async def test_a_simulated_clusters_addons_are_built_in_and_stay() -> None:
    world = World(real=False)
    with pytest.raises(ValidationFailed) as refused:
        await world.service.remove(OPERATOR, world.id, [Addon.KUEUE])
    assert [(i.field, i.code) for i in refused.value.issues] == [("addons.0", "BUILT_IN")]
