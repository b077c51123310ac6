"""MultiKueue's manager objects and budcluster as its external dispatcher (kueue/multikueue.py).

Covers, for kueue.x-k8s.io v1beta1 and v1beta2: a worker's Secret in Kueue's namespace holds its
kubeconfig under `kubeconfig`, reduced to the one context (self-contained, its current-context
set); a MultiKueueCluster per worker points at it (`spec.kubeConfig` in v1beta1,
`spec.clusterSource.kubeConfig` in v1beta2); one MultiKueueConfig per fleet lists the workers in
the fleet's order; one AdmissionCheck per fleet names it with MultiKueue's controller; the
fleet's ClusterQueue lists the check (`admissionChecks` in v1beta1, `admissionChecksStrategy`
in v1beta2), all created before the queue and labelled and stamped like every object; a check
someone added to a ClusterQueue of ours is drift; a Secret whose data changed is drift. The
dispatcher nominates only a Workload of a job of ours with quota reserved, the fleet's check
Pending and no clusterName (the cases of Kueue's ShouldSkipClusterNomination), and not again
once nominated; its patch is the status apply of field manager kueue-admission that carries
every field that manager owns as it is (conditions and checks by key), with the
resourceVersion; clusterName reads back as the member.
"""

from __future__ import annotations

import base64
import copy
import uuid
from typing import Any

import pytest
import yaml

from adapters.kubernetes.kueue.drift import drifted
from adapters.kubernetes.kueue.multikueue import (
    CONTROLLER_NAME,
    FIELD_MANAGER,
    RUN_ON,
    admission_checks,
    admitted_on,
    multikueue_objects,
    nomination,
    nomination_patch,
)
from adapters.kubernetes.kueue.objects import (
    CREATION_ORDER,
    KueueVersion,
    desired_objects,
    spec_hash,
)
from domain.model.ids import ClusterId
from domain.ports.cluster_api import MultiKueueFleet, MultiKueueWorker
from tests.support.kube_emulator import kubeconfig_for
from tests.unit.test_kueue_objects import quota_set, research

MANAGER = ClusterId(uuid.UUID(int=9))
V1, V2 = KueueVersion.V1BETA1, KueueVersion.V1BETA2


def worker(name: str) -> MultiKueueWorker:
    text = kubeconfig_for(f"https://{name}.example:6443", token=f"token-of-{name}")
    with_other = yaml.safe_load(text)
    with_other["contexts"].append({"name": "other", "context": {"cluster": "x", "user": "y"}})
    return MultiKueueWorker(name, yaml.safe_dump(with_other), "kmock")


FLEET = MultiKueueFleet("gpus", "research", (worker("west"), worker("east")))


def rendered(version: KueueVersion) -> list[dict[str, Any]]:
    return desired_objects(
        quota_set(cluster_queues=(research(),)),
        version,
        cluster_id=MANAGER,
        admission_checks=admission_checks([FLEET]),
        before_queues=multikueue_objects([FLEET], version, cluster_id=MANAGER),
    )


def of_kind(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == kind]


@pytest.mark.parametrize("version", [V1, V2])
def test_a_manager_holds_each_workers_kubeconfig_and_the_fleets_check(
    version: KueueVersion,
) -> None:
    objects = rendered(version)
    kinds = [o["kind"] for o in objects]
    assert kinds == sorted(kinds, key=CREATION_ORDER.index)  # MultiKueue's before the queue
    secrets = of_kind(objects, "Secret")
    assert [s["metadata"]["name"] for s in secrets] == ["bud-mk-east", "bud-mk-west"]
    assert {s["metadata"]["namespace"] for s in secrets} == {"kueue-system"}
    held = yaml.safe_load(secrets[1]["stringData"]["kubeconfig"])
    assert held["current-context"] == "kmock" and len(held["contexts"]) == 1
    assert held["users"][0]["user"] == {"token": "token-of-west"}
    workers = of_kind(objects, "MultiKueueCluster")
    assert [w["metadata"]["name"] for w in workers] == ["bud-east", "bud-west"]
    source = {"locationType": "Secret", "location": "bud-mk-east"}
    if version is V1:
        assert workers[0]["spec"] == {"kubeConfig": source}
    else:
        assert workers[0]["spec"] == {"clusterSource": {"kubeConfig": source}}
    [config] = of_kind(objects, "MultiKueueConfig")
    assert config["metadata"]["name"] == "bud-fleet-gpus"
    assert config["spec"] == {"clusters": ["bud-west", "bud-east"]}  # the fleet's order
    [check] = of_kind(objects, "AdmissionCheck")
    assert check["spec"] == {
        "controllerName": CONTROLLER_NAME,
        "parameters": {
            "apiGroup": "kueue.x-k8s.io",
            "kind": "MultiKueueConfig",
            "name": "bud-fleet-gpus",
        },
    }
    [queue] = of_kind(objects, "ClusterQueue")
    if version is V1:
        assert queue["spec"]["admissionChecks"] == ["bud-fleet-gpus"]
    else:
        assert queue["spec"]["admissionChecksStrategy"] == {
            "admissionChecks": [{"name": "bud-fleet-gpus"}]
        }
    for obj in [*secrets, *workers, config, check]:
        labels = obj["metadata"]["labels"]
        assert labels["app.kubernetes.io/managed-by"] == "budcluster"
        assert labels["bud.ai/cluster-id"] == str(MANAGER)
        assert obj["metadata"]["annotations"]["bud.ai/spec-hash"] == spec_hash(obj)


def test_a_check_someone_adds_to_our_queue_and_a_changed_secret_are_drift() -> None:
    plain = desired_objects(quota_set(cluster_queues=(research(),)), V2, cluster_id=MANAGER)
    [queue] = of_kind(plain, "ClusterQueue")
    live = copy.deepcopy(queue)
    live["spec"]["admissionChecksStrategy"] = {"admissionChecks": [{"name": "theirs"}]}
    assert drifted(queue, live) == "spec.admissionChecksStrategy added"
    [secret, *_] = of_kind(rendered(V2), "Secret")
    as_served = copy.deepcopy(secret)  # the API server keeps data, base64
    kubeconfig = as_served.pop("stringData")["kubeconfig"]
    as_served["data"] = {"kubeconfig": base64.b64encode(kubeconfig.encode()).decode()}
    assert drifted(secret, as_served) is None
    as_served["data"]["kubeconfig"] = base64.b64encode(b"someone else's").decode()
    assert drifted(secret, as_served) == "data.kubeconfig changed"


def job(run_on: str | None = "west") -> dict[str, Any]:
    annotations = {RUN_ON: run_on} if run_on else {}
    return {"metadata": {"name": "bud-x-a0", "namespace": "bud-t", "annotations": annotations}}


def workload(**status: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "admission": {"clusterQueue": "research", "podSetAssignments": []},
        "conditions": [
            {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"},
            {"type": "Admitted", "status": "False", "reason": "NoChecks"},
            {"type": "Other", "status": "True", "reason": "SomeoneElses"},
        ],
        "admissionChecks": [
            {"name": "bud-fleet-gpus", "state": "Pending", "message": ""},
            {"name": "provisioning", "state": "Ready", "message": ""},
        ],
        "requeueState": {"count": 1},
    }
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": "job-bud-x-a0-1a2b3",
            "namespace": "bud-t",
            "resourceVersion": "4711",
            "managedFields": [
                {
                    "manager": FIELD_MANAGER,
                    "operation": "Apply",
                    "subresource": "status",
                    "fieldsV1": {
                        "f:status": {
                            "f:admission": {},
                            "f:conditions": {
                                'k:{"type":"QuotaReserved"}': {},
                                'k:{"type":"Admitted"}': {},
                            },
                            "f:admissionChecks": {'k:{"name":"bud-fleet-gpus"}': {}},
                            "f:requeueState": {},
                        }
                    },
                },
                {"manager": "someone", "operation": "Update", "subresource": "status"},
            ],
        },
        "status": base | status,
    }


@pytest.mark.parametrize(
    ("the_job", "the_workload", "wanted"),
    [
        (job(), workload(), "bud-west"),
        (job(None), workload(), None),  # not a job budcluster dispatches
        (job(), None, None),  # no Workload yet
        (job(), workload(clusterName="bud-east"), None),  # assigned already
        (job(), workload(nominatedClusterNames=["bud-west"]), None),  # nominated already
        (job(), workload(nominatedClusterNames=["bud-east"]), "bud-west"),  # nominated elsewhere
        (job(), workload(conditions=[]), None),  # no quota reserved on the manager
        (
            job(),
            workload(admissionChecks=[{"name": "bud-fleet-gpus", "state": "Ready"}]),
            None,
        ),  # the check is not Pending
        (
            job(),
            workload(
                conditions=[
                    {"type": "QuotaReserved", "status": "True"},
                    {"type": "Finished", "status": "True"},
                ]
            ),
            None,
        ),
    ],
)
def test_only_a_workload_waiting_for_its_nomination_is_nominated(
    the_job: dict[str, Any], the_workload: dict[str, Any] | None, wanted: str | None
) -> None:
    assert nomination(the_job, the_workload) == wanted


def test_the_nomination_carries_what_kueue_admission_owns_and_the_version_read() -> None:
    wl = workload()
    patch = nomination_patch(wl, "bud-west")
    assert patch["apiVersion"] == "kueue.x-k8s.io/v1beta2" and patch["kind"] == "Workload"
    assert patch["metadata"] == {
        "name": "job-bud-x-a0-1a2b3",
        "namespace": "bud-t",
        "resourceVersion": "4711",
    }
    status = patch["status"]
    assert status["nominatedClusterNames"] == ["bud-west"]
    assert status["admission"] == wl["status"]["admission"]
    assert status["requeueState"] == {"count": 1}
    assert [c["type"] for c in status["conditions"]] == ["QuotaReserved", "Admitted"]
    assert [c["name"] for c in status["admissionChecks"]] == ["bud-fleet-gpus"]
    unrecorded = workload()
    del unrecorded["metadata"]["managedFields"]
    carried = nomination_patch(unrecorded, "bud-east")["status"]
    assert set(carried) == {"admission", "conditions", "admissionChecks", "nominatedClusterNames"}


def test_the_member_kueue_admitted_it_on_is_read_back() -> None:
    assert admitted_on(workload(clusterName="bud-east")) == "east"
    assert admitted_on(workload()) is None
    assert admitted_on(workload(clusterName="theirs")) is None  # not a worker of ours
    assert admitted_on(None) is None
