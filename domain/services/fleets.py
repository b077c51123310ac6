"""Fleets: the operator groups clusters behind one queue name (`domain.model.fleet`).

Every input is checked before anything is stored, each problem naming its field: the name (a
DNS-1123 label, not taken), the members (1 to `MAX_MEMBERS` clusters, each once, each existing
and not being deleted, each holding the fleet's ClusterQueue), the LocalQueue name, the move
threshold and the most moves, and the manager cluster (a Kubernetes cluster outside the
members: MultiKueue's manager is not one of its own workers here). Tenants read fleets as they
read clusters: to submit to them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from domain.errors import Conflict, FieldIssue, NotFound, ValidationFailed
from domain.model.cluster import Cluster, ClusterStatus
from domain.model.events import ClusterChanged, ClusterChangeKind
from domain.model.fleet import (
    DEFAULT_MAX_MOVES,
    DEFAULT_MOVE_THRESHOLD_SECONDS,
    MAX_MEMBERS,
    MAX_MOVES_LIMIT,
    Fleet,
    FleetPlan,
)
from domain.model.ids import ClusterId, FleetId, new_fleet_id
from domain.model.job import JobStatus
from domain.model.quota import DEFAULT_QUEUE
from domain.names import MAX_OBJECT_NAME, name_problem, text_problem
from domain.ports.clock import Clock
from domain.ports.unit_of_work import TenantScope, UnitOfWork, UnitOfWorkFactory

MAX_MOVE_THRESHOLD_SECONDS = 7 * 24 * 3600
"""A week: a larger threshold is no threshold (the estimator's horizon is 60 days, but a move
that must gain more than a week never happens on a cluster anyone waits on)."""


@dataclass(frozen=True)
class FleetInput:
    name: str
    cluster_ids: tuple[ClusterId, ...]
    cluster_queue: str = DEFAULT_QUEUE
    local_queue: str = DEFAULT_QUEUE
    move_threshold_seconds: int = DEFAULT_MOVE_THRESHOLD_SECONDS
    max_moves: int = DEFAULT_MAX_MOVES
    manager_cluster_id: ClusterId | None = None


def _queue_problem(name: str) -> str | None:
    return text_problem(name) or name_problem(name, max_length=MAX_OBJECT_NAME)


def _plain_issues(given: FleetInput) -> list[FieldIssue]:
    """What is wrong with the input alone, before anything is read."""
    issues: list[FieldIssue] = []
    if problem := text_problem(given.name) or name_problem(given.name):
        issues.append(FieldIssue("name", problem, "INVALID_NAME"))
    if not 1 <= len(given.cluster_ids) <= MAX_MEMBERS:
        issues.append(
            FieldIssue("cluster_ids", f"must name 1 to {MAX_MEMBERS} clusters", "TOO_MANY")
        )
    seen: set[ClusterId] = set()
    for i, cluster_id in enumerate(given.cluster_ids):
        if cluster_id in seen:
            issues.append(FieldIssue(f"cluster_ids.{i}", "names a cluster twice", "DUPLICATE"))
        seen.add(cluster_id)
    for path, value in (("cluster_queue", given.cluster_queue), ("local_queue", given.local_queue)):
        if problem := _queue_problem(value):
            issues.append(FieldIssue(path, problem, "INVALID_NAME"))
    if not 0 <= given.move_threshold_seconds <= MAX_MOVE_THRESHOLD_SECONDS:
        issues.append(
            FieldIssue(
                "move_threshold_seconds",
                f"must be from 0 to {MAX_MOVE_THRESHOLD_SECONDS} seconds",
            )
        )
    if not 0 <= given.max_moves <= MAX_MOVES_LIMIT:
        issues.append(FieldIssue("max_moves", f"must be from 0 to {MAX_MOVES_LIMIT}"))
    if given.manager_cluster_id is not None and given.manager_cluster_id in seen:
        issues.append(
            FieldIssue(
                "manager_cluster_id",
                "MultiKueue's manager cluster must not be one of the fleet's members",
                "MANAGER_IS_MEMBER",
            )
        )
    return issues


async def _stored_issues(
    uow: UnitOfWork, given: FleetInput, clusters: dict[ClusterId, Cluster]
) -> list[FieldIssue]:
    """What is wrong with what the input names, as stored now."""
    issues: list[FieldIssue] = []
    for i, cluster_id in enumerate(given.cluster_ids):
        cluster = clusters.get(cluster_id)
        if cluster is None:
            issues.append(FieldIssue(f"cluster_ids.{i}", "no such cluster", "NOT_FOUND"))
        elif cluster.status is ClusterStatus.DELETING:
            issues.append(
                FieldIssue(f"cluster_ids.{i}", "the cluster is being deleted", "CLUSTER_DELETING")
            )
        elif (
            await uow.quotas.get_cluster_queue(cluster_id=cluster_id, name=given.cluster_queue)
            is None
        ):
            issues.append(
                FieldIssue(
                    "cluster_queue",
                    f"cluster {cluster.name} has no ClusterQueue {given.cluster_queue}",
                    "NOT_FOUND",
                )
            )
    if given.manager_cluster_id is not None:
        manager = clusters.get(given.manager_cluster_id)
        if manager is None:
            issues.append(FieldIssue("manager_cluster_id", "no such cluster", "NOT_FOUND"))
        elif not manager.is_real:
            issues.append(
                FieldIssue(
                    "manager_cluster_id",
                    "MultiKueue runs on Kubernetes: a simulated cluster cannot be the manager "
                    "(leave it out: budcluster dispatches to the members itself)",
                    "NOT_KUBERNETES",
                )
            )
        elif (
            await uow.quotas.get_cluster_queue(cluster_id=manager.id, name=given.cluster_queue)
            is None
        ):
            issues.append(
                FieldIssue(
                    "cluster_queue",
                    f"the manager cluster {manager.name} has no ClusterQueue "
                    f"{given.cluster_queue} (where MultiKueue reserves the fleet's quota)",
                    "NOT_FOUND",
                )
            )
        unreal = [
            clusters[c].name for c in given.cluster_ids if c in clusters and not clusters[c].is_real
        ]
        if unreal:
            issues.append(
                FieldIssue(
                    "manager_cluster_id",
                    f"MultiKueue's workers are Kubernetes clusters: {', '.join(unreal)} is "
                    "simulated",
                    "NOT_KUBERNETES",
                )
            )
    return issues


class FleetService:
    def __init__(self, *, uow: UnitOfWorkFactory, clock: Clock) -> None:
        self._uow = uow
        self._clock = clock

    async def create(self, given: FleetInput) -> Fleet:
        now = self._clock.now()
        fleet = Fleet(
            id=new_fleet_id(),
            name=given.name,
            members=given.cluster_ids,
            created_at=now,
            updated_at=now,
        )
        return await self._store(fleet, given, new=True)

    async def update(self, fleet_id: FleetId, given: FleetInput) -> Fleet:
        async with self._uow(TenantScope.system()) as uow:
            fleet = await uow.fleets.get(fleet_id)
        if fleet is None:
            raise NotFound("fleet", fleet_id)
        return await self._store(fleet, given, new=False)

    async def _store(self, fleet: Fleet, given: FleetInput, *, new: bool) -> Fleet:
        plain = _plain_issues(given)
        async with self._uow(TenantScope.system()) as uow:
            wanted = [*given.cluster_ids, *filter(None, [given.manager_cluster_id])]
            clusters = await uow.clusters.get_many(wanted[: MAX_MEMBERS + 1])
            stored = await _stored_issues(uow, given, clusters)
            if issues := plain + [i for i in stored if i not in plain]:
                raise ValidationFailed(issues)
            named = await uow.fleets.get_by_name(given.name)
            if named is not None and named.id != fleet.id:
                raise Conflict(f"a fleet named {given.name} exists", code="NAME_TAKEN")
            before = None if new else await uow.fleets.get(fleet.id, for_update=True)
            if not new and before is None:
                raise NotFound("fleet", fleet.id)
            managers = {given.manager_cluster_id, before.manager_cluster_id if before else None}
            fleet.name, fleet.members = given.name, given.cluster_ids
            fleet.cluster_queue, fleet.local_queue = given.cluster_queue, given.local_queue
            fleet.move_threshold_seconds = given.move_threshold_seconds
            fleet.max_moves, fleet.manager_cluster_id = given.max_moves, given.manager_cluster_id
            fleet.updated_at = self._clock.now()
            await uow.fleets.put(fleet)
            _manager_changed(uow, managers)
            await uow.commit()
        return fleet

    async def delete(self, fleet_id: FleetId) -> Fleet:
        """The fleet goes; its waiting jobs stay where they are, as jobs of that cluster."""
        async with self._uow(TenantScope.system()) as uow:
            fleet = await uow.fleets.get(fleet_id, for_update=True)
            if fleet is None:
                raise NotFound("fleet", fleet_id)
            await uow.fleets.remove(fleet_id)
            _manager_changed(uow, {fleet.manager_cluster_id})
            await uow.commit()
        return fleet

    async def get(self, fleet_id: FleetId) -> Fleet | None:
        async with self._uow(TenantScope.system()) as uow:
            return await uow.fleets.get(fleet_id)

    async def all(self) -> list[Fleet]:
        async with self._uow(TenantScope.system()) as uow:
            return await uow.fleets.all()

    async def plan(self, fleet_id: FleetId) -> FleetPlan | None:
        """The fleet's last plan, without the jobs admitted (or ended) since it was made: the
        queue as it stands, whoever reads it (others' jobs are shown, unnamed, as well)."""
        async with self._uow(TenantScope.system()) as uow:
            plan = await uow.fleets.plan(fleet_id)
            if plan is None or not plan.jobs:
                return plan
            jobs = await uow.jobs.get_many([p.job_id for p in plan.jobs])
        waiting = (JobStatus.PENDING, JobStatus.QUEUED)
        kept = tuple(p for p in plan.jobs if p.job_id in jobs and jobs[p.job_id].status in waiting)
        return replace(plan, jobs=kept)


def _manager_changed(uow: UnitOfWork, managers: set[ClusterId | None]) -> None:
    """What MultiKueue's manager holds for its fleets changed: its Kueue objects are put onto
    it again (the reactions to a QUOTAS change of a real cluster)."""
    for manager in sorted(filter(None, managers), key=str):
        uow.record(ClusterChanged(ClusterChangeKind.QUOTAS, manager))


async def forget_member(uow: UnitOfWork, cluster_id: ClusterId) -> None:
    """A deleted cluster leaves every fleet it was in (and stops being one's manager)."""
    for fleet in await uow.fleets.all():
        if fleet.has(cluster_id) or fleet.manager_cluster_id == cluster_id:
            fleet.members = tuple(m for m in fleet.members if m != cluster_id)
            if fleet.manager_cluster_id == cluster_id:
                fleet.manager_cluster_id = None
            await uow.fleets.put(fleet)


def members_of(fleet: Fleet, clusters: Sequence[Cluster]) -> list[Cluster]:
    """The fleet's member clusters that exist, in the fleet's order."""
    by_id = {c.id: c for c in clusters}
    return [by_id[m] for m in fleet.members if m in by_id]
