"""The quota model onto a real cluster as Kueue objects, against kmock's emulator over HTTP.

Covers, on SQLite and PostgreSQL: connecting an AVAILABLE cluster creates the default flavors
(selecting the nodes' product label), the default ClusterQueue (all namespaces), the priority
classes, and reports `kueue_quotas` ok; a second pass changes nothing; a tenant's LocalQueue
brings its namespace (tenant label, Pod Security baseline) and the queue, through the quota
change's task; a ClusterQueue edited in the cluster and a flavor deleted there are restored and
reported as drift, while a change of the model is not drift; an object the model dropped is
removed; v1beta1 clusters get `cohort` and fungibility's Borrow, v1beta2 ones `cohortName` and
MayStopSearch, both a queue's borrowWithinCohort and weight and a cohort's parent (an implicit
one as an empty Cohort), quotas and weight, and a second pass finds no drift; a queue's
flavorFungibility preference goes to either version when set, and one changed or added in the
cluster is restored and reported as drift; a cluster without
Kueue, or with no supported version, fails the check with the reason.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from adapters.db.engine import Database
from adapters.secrets.keyring import write_new_key
from adapters.tasks.inprocess import InProcessTaskQueue
from budcluster.bootstrap import App
from budcluster.runtime import Runtime
from domain.model.cluster import Cluster, ClusterStatus, HealthCheck, Platform
from domain.model.ids import ClusterId, TenantId
from domain.model.principal import Principal, Scope
from domain.model.quota import (
    BorrowWithinCohort,
    BorrowWithinCohortPolicy,
    FlavorFungibility,
    FlavorQuotas,
    FungibilityPolicy,
    FungibilityPreference,
    PreemptionPolicy,
    QueueingStrategy,
    ReclaimWithinCohort,
    ResourceGroup,
    ResourceQuota,
    WithinClusterQueue,
    tenant_namespace,
)
from domain.ports.unit_of_work import TenantScope
from domain.services.quota_rules import ClusterQueueSpec, CohortSpec
from domain.services.registry import Registration
from tests.integration.test_app_flows import make_app
from tests.support import k8s_nodes
from tests.support.kube_emulator import KubeEmulator, kubeconfig_for, running_emulator

ADMIN = Principal(TenantId(uuid.uuid4()), frozenset({Scope.ADMIN}))
TENANT = TenantId(uuid.uuid4())


@pytest.fixture
async def app(db: Database, tmp_path: Path) -> AsyncIterator[App]:
    keys = tmp_path / "keys"
    write_new_key(keys, bits=3072)
    built = await make_app(db.url, keys_dir=keys, kube_plain_http=True)  # the emulator's HTTP
    runtime = Runtime(built)
    await runtime.start(supervisor=False)  # in-process tasks run (a quota change's reconcile)
    yield built
    await runtime.stop()
    await built.close()


async def drain(app: App) -> None:
    """Run the tasks queued so far (the app runs them in process)."""
    assert isinstance(app.tasks, InProcessTaskQueue)
    await app.tasks.drain()


async def connected(app: App, emulator: KubeEmulator, name: str = "lab") -> Cluster:
    cluster = await app.registry.register(
        Registration(name=name, platform=Platform.ON_PREM, kubeconfig=kubeconfig_for(emulator))
    )
    await drain(app)  # the registration's own connect
    done = await app.registry.connect(cluster.id)
    assert done.status is ClusterStatus.AVAILABLE, done.reason
    return done


async def stored(app: App, cluster_id: ClusterId) -> Cluster:
    async with app.db.unit_of_work(TenantScope.system()) as uow:
        cluster = await uow.clusters.get(cluster_id)
    assert cluster is not None
    return cluster


def quotas_check(cluster: Cluster) -> HealthCheck:
    return next(h for h in cluster.health if h.name == "kueue_quotas")


def by_name(emulator: KubeEmulator, plural: str) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in emulator.kueue_objects(plural)}


@pytest.fixture
async def kueue() -> AsyncIterator[KubeEmulator]:
    async with running_emulator() as emulator:
        emulator.serve_kueue("v1beta1", "v1beta2")
        emulator.seed(k8s_nodes.a100_gfd_node(), k8s_nodes.control_plane_node())
        yield emulator


async def test_quotas_are_put_in_place_and_kept(app: App, kueue: KubeEmulator) -> None:
    cluster = await connected(app, kueue)
    check = quotas_check(cluster)
    assert check.ok and "in place (kueue.x-k8s.io/v1beta2)" in check.detail, check
    flavors = by_name(kueue, "resourceflavors")
    assert flavors["nvidia-a100-80gb"]["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    assert flavors["nvidia-a100-80gb"]["spec"]["nodeLabels"] == {
        "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"
    }
    queue = by_name(kueue, "clusterqueues")["default"]
    assert queue["spec"]["namespaceSelector"] == {}
    groups = queue["spec"]["resourceGroups"]
    assert groups[0]["flavors"][0]["resources"] == [{"name": "nvidia.com/gpu", "nominalQuota": 8}]
    assert queue["metadata"]["labels"]["bud.ai/cluster-id"] == str(cluster.id)
    classes = by_name(kueue, "workloadpriorityclasses")
    assert {"bud-high", "bud-normal", "bud-low"} <= set(classes)

    again = await app.registry.connect(cluster.id)
    assert quotas_check(again) == check  # nothing to do the second time

    await app.quotas.create_local_queue(
        ADMIN, cluster_id=cluster.id, name="team", cluster_queue="default", tenant_id=TENANT
    )
    await drain(app)
    namespace = tenant_namespace(TENANT)
    local = {
        (o["metadata"]["namespace"], o["metadata"]["name"]): o
        for o in kueue.kueue_objects("localqueues")
    }
    assert local[(namespace, "team")]["spec"] == {"clusterQueue": "default"}
    labels = kueue.namespaces[namespace]["metadata"]["labels"]
    assert labels["bud.ai/tenant-id"] == str(TENANT)
    assert labels["pod-security.kubernetes.io/enforce"] == "baseline"


async def test_drift_is_restored_and_reported(app: App, kueue: KubeEmulator) -> None:
    cluster = await connected(app, kueue)
    queue = by_name(kueue, "clusterqueues")["default"]
    await kueue.patch_object(
        {**queue, "kind": "ClusterQueue"},
        {"spec": {"queueingStrategy": "StrictFIFO"}},
    )
    flavor = by_name(kueue, "resourceflavors")["default-cpu"]
    await kueue.delete_object(flavor)

    restored = await app.registry.connect(cluster.id)
    check = quotas_check(restored)
    assert check.ok and "restored after drift" in check.detail
    assert "ClusterQueue/default (spec.queueingStrategy changed)" in check.detail
    assert "ResourceFlavor/default-cpu (missing)" in check.detail
    assert by_name(kueue, "clusterqueues")["default"]["spec"]["queueingStrategy"] == (
        "BestEffortFIFO"
    )
    assert "default-cpu" in by_name(kueue, "resourceflavors")

    # a change of the model is not drift; what the model drops is removed
    spec = ClusterQueueSpec(
        cluster_id=cluster.id,
        name="spare",
        resource_groups=(
            ResourceGroup(
                ("nvidia.com/gpu",),
                (FlavorQuotas("nvidia-a100-80gb", (ResourceQuota("nvidia.com/gpu", 2),)),),
            ),
        ),
    )
    await app.quotas.create_cluster_queue(ADMIN, spec)  # its task puts it on the cluster
    await drain(app)
    assert by_name(kueue, "clusterqueues")["spare"]["spec"]["resourceGroups"]
    changed = replace(spec, queueing_strategy=QueueingStrategy.STRICT_FIFO)
    await app.quotas.update_cluster_queue(ADMIN, changed)
    await drain(app)
    assert by_name(kueue, "clusterqueues")["spare"]["spec"]["queueingStrategy"] == "StrictFIFO"
    assert "restored" not in quotas_check(await stored(app, cluster.id)).detail
    await app.quotas.delete_cluster_queue(ADMIN, cluster_id=cluster.id, name="spare")
    await drain(app)
    assert "spare" not in by_name(kueue, "clusterqueues")
    assert "removed: ClusterQueue/spare" in quotas_check(await stored(app, cluster.id)).detail


@pytest.mark.parametrize(
    ("served", "field", "may_stop"),
    [("v1beta1", "cohort", "Borrow"), ("v1beta2", "cohortName", "MayStopSearch")],
)
async def test_the_cohort_field_follows_the_served_version(
    app: App, served: str, field: str, may_stop: str
) -> None:
    async with running_emulator() as emulator:
        emulator.serve_kueue(served)
        emulator.seed(k8s_nodes.a100_gfd_node())
        cluster = await connected(app, emulator)
        pool = ResourceGroup(
            ("nvidia.com/gpu",),
            (FlavorQuotas("nvidia-a100-80gb", (ResourceQuota("nvidia.com/gpu", 1, 1),)),),
        )
        research = CohortSpec(
            cluster.id, "research", parent="org", resource_groups=(pool,), fair_sharing_weight=2
        )
        await app.quotas.create_cohort(ADMIN, research)
        spec = ClusterQueueSpec(
            cluster_id=cluster.id,
            name="shared",
            cohort="research",
            resource_groups=(
                ResourceGroup(
                    ("nvidia.com/gpu",),
                    (
                        FlavorQuotas(
                            "nvidia-a100-80gb",
                            (ResourceQuota("nvidia.com/gpu", 4, borrowing_limit=2),),
                        ),
                    ),
                ),
            ),
            preemption=PreemptionPolicy(
                WithinClusterQueue.LOWER_PRIORITY,
                ReclaimWithinCohort.ANY,
                BorrowWithinCohort(BorrowWithinCohortPolicy.LOWER_PRIORITY, 10),
            ),
            fair_sharing_weight=0.5,
        )
        await app.quotas.create_cluster_queue(ADMIN, spec)
        done = await app.registry.reconcile_quotas(cluster.id)
        assert quotas_check(done).ok, quotas_check(done)
        shared = by_name(emulator, "clusterqueues")["shared"]
        assert shared["apiVersion"] == f"kueue.x-k8s.io/{served}"
        assert shared["spec"][field] == "research"
        other = {"cohort": "cohortName", "cohortName": "cohort"}[field]
        assert other not in shared["spec"]
        assert (
            shared["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["borrowingLimit"] == 2
        )
        assert shared["spec"]["preemption"]["borrowWithinCohort"] == {
            "policy": "LowerPriority",
            "maxPriorityThreshold": 10,
        }
        assert shared["spec"]["flavorFungibility"] == {
            "whenCanBorrow": may_stop,
            "whenCanPreempt": "TryNextFlavor",
        }
        assert shared["spec"]["fairSharing"] == {"weight": "0.5"}
        cohorts = by_name(emulator, "cohorts")
        assert cohorts["research"]["spec"]["parentName"] == "org"
        assert cohorts["research"]["spec"]["fairSharing"] == {"weight": 2}
        assert cohorts["research"]["spec"]["resourceGroups"][0]["flavors"][0]["resources"] == [
            {"name": "nvidia.com/gpu", "nominalQuota": 1, "borrowingLimit": 1}
        ]
        assert cohorts["org"]["spec"] == {}  # implicit: a name only
        again = await app.registry.reconcile_quotas(cluster.id)
        assert quotas_check(again) == quotas_check(done)  # nothing drifted against itself


@pytest.mark.parametrize("served", ["v1beta1", "v1beta2"])
async def test_a_fungibility_preference_is_put_in_place_and_kept(app: App, served: str) -> None:
    try_next = FungibilityPolicy.TRY_NEXT_FLAVOR
    async with running_emulator() as emulator:
        emulator.serve_kueue(served)
        emulator.seed(k8s_nodes.a100_gfd_node())
        cluster = await connected(app, emulator)
        gpus = (
            ResourceGroup(
                ("nvidia.com/gpu",),
                (FlavorQuotas("nvidia-a100-80gb", (ResourceQuota("nvidia.com/gpu", 2),)),),
            ),
        )
        prefers = FlavorFungibility(
            try_next, try_next, FungibilityPreference.PREEMPTION_OVER_BORROWING
        )
        for name, fungibility in [
            ("prefers", prefers),
            ("plain", FlavorFungibility(try_next, try_next)),
        ]:
            spec = ClusterQueueSpec(
                cluster_id=cluster.id,
                name=name,
                resource_groups=gpus,
                flavor_fungibility=fungibility,
            )
            await app.quotas.create_cluster_queue(ADMIN, spec)
        done = await app.registry.reconcile_quotas(cluster.id)
        assert quotas_check(done).ok, quotas_check(done)
        queues = by_name(emulator, "clusterqueues")
        assert queues["prefers"]["spec"]["flavorFungibility"] == {
            "whenCanBorrow": "TryNextFlavor",
            "whenCanPreempt": "TryNextFlavor",
            "preference": "PreemptionOverBorrowing",
        }
        assert "preference" not in queues["plain"]["spec"]["flavorFungibility"]
        again = await app.registry.reconcile_quotas(cluster.id)
        assert "restored" not in quotas_check(again).detail  # nothing drifted against itself

        for name, value in [
            ("prefers", "BorrowingOverPreemption"),
            ("plain", "PreemptionOverBorrowing"),
        ]:
            await emulator.patch_object(
                {**queues[name], "kind": "ClusterQueue"},
                {"spec": {"flavorFungibility": {"preference": value}}},
            )
        restored = await app.registry.reconcile_quotas(cluster.id)
        check = quotas_check(restored)
        assert check.ok and "restored after drift" in check.detail, check
        assert "ClusterQueue/prefers (spec.flavorFungibility.preference changed)" in check.detail
        assert "ClusterQueue/plain (spec.flavorFungibility.preference added)" in check.detail
        queues = by_name(emulator, "clusterqueues")
        assert queues["prefers"]["spec"]["flavorFungibility"]["preference"] == (
            "PreemptionOverBorrowing"
        )
        assert "preference" not in queues["plain"]["spec"]["flavorFungibility"]


@pytest.mark.parametrize(
    ("served", "reason"),
    [((), "Kueue is not installed"), (("v1alpha1",), "none supported")],
)
async def test_without_a_usable_kueue_the_check_says_why(
    app: App, served: tuple[str, ...], reason: str
) -> None:
    async with running_emulator() as emulator:
        if served:
            emulator.serve_kueue(*served)
        emulator.seed(k8s_nodes.a100_gfd_node())
        cluster = await connected(app, emulator)
        check = quotas_check(cluster)
        assert not check.ok and reason in check.detail
        assert cluster.status is ClusterStatus.AVAILABLE  # the cluster itself is fine
