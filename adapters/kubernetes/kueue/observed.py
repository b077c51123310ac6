"""What budcluster runs on a Kueue cluster, as the gateway's lists and watches saw it: its batch
Jobs, JobSets and pods, and the Kueue Workloads they own, merged into one observation per
attempt (kueue/jobs.py, kueue/jobsets.py and kueue/services.py say what each means).

A change to any of an attempt's objects names the attempts it may have changed
(`Observed.apply`), and each is observed again whole; an attempt whose objects went is reported
once as gone."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from adapters.kubernetes.kueue.jobs import job_identity, observe, owner_job_name, pod_job_name
from adapters.kubernetes.kueue.jobsets import observe_job_set, owner_job_set_name, pod_job_set_name
from adapters.kubernetes.kueue.reading import located, true_condition
from adapters.kubernetes.kueue.services import is_service_pod, observe_service, owner_pod
from domain.model.ids import JobId
from domain.ports.clock import Clock
from domain.ports.gateways import WorkloadObservation

Json = dict[str, Any]
Key = tuple[str, ...]
"""("job", namespace, name) for a batch Job; ("jobset", namespace, name) for a JobSet;
("service", job id, attempt) for a release's pods."""


class Observed:
    """budcluster's batch Jobs, JobSets and pods on the cluster, and the Kueue Workloads owned
    by them. A batch Job or a JobSet (not its Jobs) is one attempt; a service attempt is the
    pods of its release."""

    def __init__(self) -> None:
        self.jobs: dict[tuple[str, str], Json] = {}
        self.job_sets: dict[tuple[str, str], Json] = {}
        self.pods: dict[tuple[str, str], Json] = {}
        self.workloads: dict[tuple[str, str, str], Json] = {}
        """By owner: ("Job" | "JobSet" | "Pod", namespace, name)."""
        self.gone: dict[tuple[str, str], Json] = {}
        """Jobs deleted since they were seen: reported once as DELETED."""
        self.gone_job_sets: dict[tuple[str, str], Json] = {}
        """JobSets deleted since they were seen: reported once as DELETED."""
        self.services_seen: set[Key] = set()
        self.evicted: dict[Key, Json] = {}
        """The last Evicted condition seen on a service attempt's Workloads."""

    def put(self, kind: str, obj: Json) -> list[Key]:
        return self.apply(kind, "ADDED", obj)

    def apply(self, kind: str, change: str, obj: Json) -> list[Key]:
        """Take in one change; the attempts it may have changed."""
        key = located(obj)
        if kind == "workload":
            owner = workload_owner(obj)
            if owner is None:
                return []
            if change == "DELETED":
                self.workloads.pop(owner, None)
            else:
                self.workloads[owner] = obj
                evicted = true_condition(obj, "Evicted")
                if evicted is not None and owner[0] == "Pod":
                    pod = self.pods.get(owner[1:])
                    if pod is not None:
                        self.evicted[service_key(pod)] = dict(evicted)
            if owner[0] == "Job":
                return [("job", *owner[1:])] if owner[1:] in self.jobs else []
            if owner[0] == "JobSet":
                return [("jobset", *owner[1:])] if owner[1:] in self.job_sets else []
            pod = self.pods.get(owner[1:])
            return self._attempts_of(pod)
        if kind == "jobset":
            if change == "DELETED":
                self.gone_job_sets[key] = self.job_sets.pop(key, obj)
            else:
                self.job_sets[key] = obj
            return [("jobset", *key)]
        if kind == "job" and pod_job_set_name(obj):
            return []  # one of a JobSet's Jobs: the JobSet is the attempt
        if kind == "job":
            if change == "DELETED":
                self.gone[key] = self.jobs.pop(key, obj)
            else:
                self.jobs[key] = obj
            return [("job", *key)]
        # a pod
        if change == "DELETED":
            pod = self.pods.pop(key, obj)
        else:
            pod = self.pods[key] = obj
        return self._attempts_of(pod)

    def _attempts_of(self, pod: Json | None) -> list[Key]:
        if pod is None:
            return []
        if is_service_pod(pod):
            return [service_key(pod)]
        namespace = located(pod)[0]
        if (job_set_name := pod_job_set_name(pod)) is not None:
            found = (namespace, job_set_name) in self.job_sets
            return [("jobset", namespace, job_set_name)] if found else []
        owner = pod_job_name(pod)
        namespace = located(pod)[0]
        return [("job", namespace, owner)] if owner and (namespace, owner) in self.jobs else []

    def observation(self, key: Key, clock: Clock) -> WorkloadObservation | None:
        now = clock.now()
        if key[0] == "service":
            pods = [p for p in self.pods.values() if is_service_pod(p) and service_key(p) == key]
            by_pod = {
                located(p)[1]: w
                for p in pods
                if (w := self.workloads.get(("Pod", *located(p)))) is not None
            }
            seen = observe_service(
                (JobId(uuid.UUID(key[1])), int(key[2])),
                pods,
                by_pod,
                observed_at=now,
                seen_before=key in self.services_seen,
                evicted=self.evicted.get(key),
            )
            if pods:
                self.services_seen.add(key)
            else:  # reported once as gone
                self.services_seen.discard(key)
                self.evicted.pop(key, None)
            return seen
        if key[0] == "jobset":
            return self._job_set_observation((key[1], key[2]), now)
        job_key = (key[1], key[2])
        pods = [
            p
            for p in self.pods.values()
            if (located(p)[0], pod_job_name(p)) == job_key and not pod_job_set_name(p)
        ]
        if job_key in self.gone:  # its last state, as being deleted (a finished one stays so)
            job = self.gone.pop(job_key)
            metadata = {"deletionTimestamp": now.isoformat(), **(job.get("metadata") or {})}
            workload = self.workloads.pop(("Job", *job_key), None)
            return observe({**job, "metadata": metadata}, workload, observed_at=now, pods=pods)
        return observe(
            self.jobs.get(job_key),
            self.workloads.get(("Job", *job_key)),
            observed_at=now,
            pods=pods,
        )

    def _job_set_observation(
        self, key: tuple[str, str], now: datetime
    ) -> WorkloadObservation | None:
        pods = [p for p in self.pods.values() if (located(p)[0], pod_job_set_name(p)) == key]
        if key in self.gone_job_sets:  # its last state, as being deleted
            gone = self.gone_job_sets.pop(key)
            metadata = {"deletionTimestamp": now.isoformat(), **(gone.get("metadata") or {})}
            workload = self.workloads.pop(("JobSet", *key), None)
            return observe_job_set(
                {**gone, "metadata": metadata}, workload, observed_at=now, pods=pods
            )
        return observe_job_set(
            self.job_sets.get(key),
            self.workloads.get(("JobSet", *key)),
            observed_at=now,
            pods=pods,
        )

    def attempts(self) -> list[Key]:
        keys: list[Key] = [("job", *k) for k in sorted(self.jobs)]
        keys += [("jobset", *k) for k in sorted(self.job_sets)]
        keys += sorted({service_key(p) for p in self.pods.values() if is_service_pod(p)})
        return keys

    def observations(self, clock: Clock) -> list[WorkloadObservation]:
        found = (self.observation(key, clock) for key in self.attempts())
        return [seen for seen in found if seen is not None]


def service_key(pod: Json) -> Key:
    identity = job_identity(pod)
    assert identity is not None
    return ("service", str(identity[0]), str(identity[1]))


def workload_owner(workload: Json) -> tuple[str, str, str] | None:
    namespace = str((workload.get("metadata") or {}).get("namespace") or "")
    if (job := owner_job_name(workload)) is not None:
        return ("Job", namespace, job)
    if (job_set_name := owner_job_set_name(workload)) is not None:
        return ("JobSet", namespace, job_set_name)
    if (pod := owner_pod(workload)) is not None:
        return ("Pod", namespace, pod)
    return None
