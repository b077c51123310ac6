"""A fleet through MultiKueue on Kubernetes, against kmock's emulator over HTTP: one emulator
is the manager (Kueue with MultiKueue's API), two are workers.

The test plays Kueue on the manager: it makes the Workload Kueue would make for a Job and sets
its status (QuotaReserved, the fleet's admission check Pending; then clusterName, Admitted and
the check Ready), as Kueue's v1beta1 and v1beta2 APIs document them.

Covers, for both kueue.x-k8s.io versions: a fleet with a manager puts onto it a Secret per worker
(its kubeconfig, pointing at that worker), a MultiKueueCluster per worker, the fleet's
MultiKueueConfig and AdmissionCheck, and the check on the fleet's ClusterQueue, and reports
`kueue_quotas` ok; one deleted there is restored and reported as drift; a fleet deleted takes
them away. A job submitted to the fleet is handed to the manager (its Job there says the member
to run on; the workers get nothing from budcluster), with the tenant's LocalQueue put there;
once its Workload has quota reserved and the check Pending, budcluster nominates the member with
a server-side apply of the Workload's status as field manager kueue-admission; Kueue's admission
reads back (ADMITTED); Kueue admitting it on the other member makes it that member's job, said
as a move.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from adapters.db.engine import Database
from adapters.secrets.keyring import write_new_key
from adapters.tasks.inprocess import InProcessTaskQueue
from budcluster.bootstrap import App
from budcluster.runtime import Runtime
from domain.model.cluster import Cluster, ClusterStatus, Platform
from domain.model.ids import ClusterId, FleetId, ProjectId, TenantId
from domain.model.job import ChangeKind, DeploymentType, JobStatus, JobType, Resources
from domain.model.principal import Principal, Scope
from domain.model.quota import tenant_namespace
from domain.ports.unit_of_work import TenantScope
from domain.services.fleets import FleetInput
from domain.services.registry import Registration
from domain.services.submission import JobSubmission
from tests.integration.test_app_flows import make_app
from tests.support import k8s_nodes
from tests.support.kube_emulator import KubeEmulator, kubeconfig_for, running_emulator

ALICE = Principal(TenantId(uuid.uuid4()), frozenset({Scope.ADMIN}))
NOW = "2026-11-22T12:00:00Z"


@pytest.fixture
async def app(db: Database, tmp_path: Path) -> AsyncIterator[App]:
    keys = tmp_path / "keys"
    write_new_key(keys, bits=3072)
    built = await make_app(db.url, keys_dir=keys, kube_plain_http=True)
    runtime = Runtime(built)
    await runtime.start(supervisor=False)  # in-process tasks run when drained
    yield built
    await runtime.stop()
    await built.close()


async def drain(app: App) -> None:
    assert isinstance(app.tasks, InProcessTaskQueue)
    await app.tasks.drain()


async def connected(app: App, emulator: KubeEmulator, name: str) -> Cluster:
    cluster = await app.registry.register(
        Registration(name=name, platform=Platform.ON_PREM, kubeconfig=kubeconfig_for(emulator))
    )
    await drain(app)
    done = await app.registry.connect(cluster.id)
    assert done.status is ClusterStatus.AVAILABLE, done.reason
    return done


@dataclass
class Fleet:
    manager: KubeEmulator
    workers: dict[str, KubeEmulator]
    manager_id: ClusterId
    member_ids: dict[str, ClusterId]
    fleet_id: FleetId


@pytest.fixture(params=["v1beta1", "v1beta2"])
async def fleet(request: pytest.FixtureRequest, app: App) -> AsyncIterator[Fleet]:
    version = request.param
    async with (
        running_emulator() as manager,
        running_emulator() as west,
        running_emulator() as east,
    ):
        manager.serve_kueue(version)
        manager.serve_multikueue(version)
        manager.seed(k8s_nodes.a100_gfd_node())
        for worker in (west, east):
            worker.serve_kueue(version)
            worker.seed(k8s_nodes.a100_gfd_node())
        manager_cluster = await connected(app, manager, "hub")
        members = {
            name: await connected(app, e, name) for name, e in (("west", west), ("east", east))
        }
        made = await app.fleets.create(
            FleetInput(
                "gpus",
                (members["west"].id, members["east"].id),
                manager_cluster_id=manager_cluster.id,
            )
        )
        await drain(app)  # the manager's quotas, with MultiKueue's objects
        yield Fleet(
            manager,
            {"west": west, "east": east},
            manager_cluster.id,
            {n: c.id for n, c in members.items()},
            made.id,
        )


def by_name(emulator: KubeEmulator, plural: str) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in emulator.kueue_objects(plural)}


def secrets(emulator: KubeEmulator) -> dict[str, dict[str, Any]]:
    found = {}
    for (resource, namespace, name), obj in emulator.objects.items():
        if resource.plural == "secrets" and namespace == "kueue-system" and not obj.deleted:
            found[name] = obj.raw
    return found


async def quotas_detail(app: App, cluster_id: ClusterId) -> tuple[bool, str]:
    async with app.db.unit_of_work(TenantScope.system()) as uow:
        cluster = await uow.clusters.get(cluster_id)
    assert cluster is not None
    check = next(h for h in cluster.health if h.name == "kueue_quotas")
    return check.ok, check.detail


async def test_the_manager_holds_what_multikueue_needs(app: App, fleet: Fleet) -> None:
    ok, detail = await quotas_detail(app, fleet.manager_id)
    assert ok, detail
    held = secrets(fleet.manager)
    assert set(held) == {"bud-mk-west", "bud-mk-east"}
    data = held["bud-mk-west"].get("data") or {}
    text = (
        base64.b64decode(data["kubeconfig"]).decode()
        if "kubeconfig" in data
        else held["bud-mk-west"]["stringData"]["kubeconfig"]
    )
    kubeconfig = yaml.safe_load(text)
    west_url = kubeconfig_for(fleet.workers["west"])
    assert (
        kubeconfig["clusters"][0]["cluster"]["server"]
        == yaml.safe_load(west_url)["clusters"][0]["cluster"]["server"]
    )
    workers = by_name(fleet.manager, "multikueueclusters")
    assert set(workers) == {"bud-west", "bud-east"}
    assert by_name(fleet.manager, "multikueueconfigs")["bud-fleet-gpus"]["spec"] == {
        "clusters": ["bud-west", "bud-east"]
    }
    check = by_name(fleet.manager, "admissionchecks")["bud-fleet-gpus"]
    assert check["spec"]["controllerName"] == "kueue.x-k8s.io/multikueue"
    queue = by_name(fleet.manager, "clusterqueues")["default"]["spec"]
    listed = queue.get("admissionChecks") or [
        c["name"] for c in queue["admissionChecksStrategy"]["admissionChecks"]
    ]
    assert listed == ["bud-fleet-gpus"]
    for worker in fleet.workers.values():  # a worker's own queue carries no MultiKueue check
        spec = by_name(worker, "clusterqueues")["default"]["spec"]
        assert "admissionChecks" not in spec and "admissionChecksStrategy" not in spec

    config = by_name(fleet.manager, "multikueueconfigs")["bud-fleet-gpus"]
    await fleet.manager.delete_object({**config, "kind": "MultiKueueConfig"})
    await app.registry.reconcile_quotas(fleet.manager_id)
    ok, detail = await quotas_detail(app, fleet.manager_id)
    assert ok and "MultiKueueConfig/bud-fleet-gpus (missing)" in detail, detail
    assert "bud-fleet-gpus" in by_name(fleet.manager, "multikueueconfigs")

    await app.fleets.delete(fleet.fleet_id)
    await drain(app)
    assert by_name(fleet.manager, "multikueueclusters") == {}
    assert by_name(fleet.manager, "admissionchecks") == {}
    assert secrets(fleet.manager) == {}
    queue = by_name(fleet.manager, "clusterqueues")["default"]["spec"]
    assert not queue.get("admissionChecks") and not queue.get("admissionChecksStrategy")


def workload_for(job: dict[str, Any], version: str, **status: Any) -> dict[str, Any]:
    meta = job["metadata"]
    return {
        "apiVersion": f"kueue.x-k8s.io/{version}",
        "kind": "Workload",
        "metadata": {
            "name": f"job-{meta['name']}-1a2b3",
            "namespace": meta["namespace"],
            "resourceVersion": "41",
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": meta["name"],
                    "uid": meta.get("uid", "u-1"),
                    "controller": True,
                }
            ],
        },
        "spec": {"queueName": "default", "podSets": []},
        "status": status,
    }


RESERVED = {
    "admission": {"clusterQueue": "default", "podSetAssignments": []},
    "conditions": [
        {
            "type": "QuotaReserved",
            "status": "True",
            "reason": "QuotaReserved",
            "lastTransitionTime": NOW,
        }
    ],
    "admissionChecks": [{"name": "bud-fleet-gpus", "state": "Pending", "message": ""}],
}


async def test_a_fleet_job_goes_through_the_manager_and_is_nominated(
    app: App, fleet: Fleet
) -> None:
    version = by_name(fleet.manager, "clusterqueues")["default"]["apiVersion"].rpartition("/")[2]
    sub = JobSubmission(
        name="train",
        project_id=ProjectId(uuid.uuid4()),
        cluster_id=fleet.manager_id,
        fleet_id=fleet.fleet_id,
        job_type=JobType.TRAINING,
        deployment_type=DeploymentType.DOCKER,
        spec={"image": "ghcr.io/acme/train:1"},
        resources=Resources("nvidia-a100-80gb", 4),
        estimated_duration_seconds=600,
    )
    job = await app.dispatcher.submit(ALICE, sub)
    member = next(n for n, c in fleet.member_ids.items() if c == job.cluster_id)
    assert job.dispatched_via == fleet.manager_id
    await drain(app)  # the manager's LocalQueue for the tenant, then the hand-over
    namespace = tenant_namespace(ALICE.tenant_id)
    queues = {
        (o["metadata"]["namespace"], o["metadata"]["name"])
        for o in fleet.manager.kueue_objects("localqueues")
    }
    assert (namespace, "default") in queues
    jobs = [
        obj.raw
        for (resource, _, _), obj in fleet.manager.objects.items()
        if resource.plural == "jobs" and not obj.deleted
    ]
    [handed] = jobs
    assert handed["metadata"]["annotations"]["bud.ai/run-on"] == member
    assert handed["metadata"]["labels"]["bud.ai/cluster-id"] == str(fleet.manager_id)
    for worker in fleet.workers.values():  # Kueue copies it there, not budcluster
        assert not [k for k in worker.objects if k[0].plural == "jobs"]
    assert (await app.jobs.get(ALICE, job.id)).status is JobStatus.QUEUED  # type: ignore[union-attr]

    await fleet.manager.create(workload_for(handed, version, **RESERVED))
    gateway = app.gateways.for_cluster(await app.clusters.get(fleet.manager_id))  # type: ignore[arg-type]
    await gateway.list_workloads()
    [applied] = fleet.manager.status_applies
    assert applied["path"].endswith(f"/workloads/job-{handed['metadata']['name']}-1a2b3/status")
    assert applied["query"] == {"fieldManager": "kueue-admission", "force": "true"}
    assert applied["content_type"] == "application/apply-patch+yaml"
    status = applied["body"]["status"]
    assert status["nominatedClusterNames"] == [f"bud-{member}"]
    assert status["admission"] == RESERVED["admission"]
    assert applied["body"]["metadata"]["resourceVersion"] == "41"  # as read: a stale one is 409
    await gateway.list_workloads()
    assert len(fleet.manager.status_applies) == 1  # nominated already: nothing more

    other = next(n for n in fleet.member_ids if n != member)
    [wl] = fleet.manager.kueue_objects("workloads")
    await fleet.manager.patch_object(
        wl,
        {
            "status": {
                "nominatedClusterNames": None,
                "clusterName": f"bud-{other}",
                "admissionChecks": [{"name": "bud-fleet-gpus", "state": "Ready", "message": ""}],
                "conditions": [
                    *RESERVED["conditions"],
                    {
                        "type": "Admitted",
                        "status": "True",
                        "reason": "Admitted",
                        "lastTransitionTime": NOW,
                    },
                ],
            }
        },
    )
    [seen] = await gateway.list_workloads()
    assert seen.admitted_on == other
    applied_batch = await app.observations.apply_batch([seen], cluster_id=fleet.manager_id)
    [changed] = applied_batch.changed
    assert changed.status is JobStatus.ADMITTED and changed.cluster_id == fleet.member_ids[other]
    async with app.db.unit_of_work(TenantScope.system()) as uow:
        moves = await uow.jobs.moves([job.id])
        events = await uow.events_after(fleet.member_ids[other], 0, limit=100)
    assert [(m.from_cluster, m.to_cluster) for m in moves[job.id]] == [
        (fleet.member_ids[member], fleet.member_ids[other])
    ]
    assert ChangeKind.MOVED in [e.change.kind for e in events if e.job_change]
