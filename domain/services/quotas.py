"""Kueue's objects of each cluster, the priority classes and capacity reservations: commands,
reads, and the quotas every new cluster starts with.

Who may do what. Flavors, ClusterQueues, cohorts and priority classes are shared by every tenant
of a cluster: changing them is the platform operator's (`clusters:write`; admin implies it). A
tenant makes and removes its own LocalQueues, in its namespace (`queues:write`); only an admin may
do so for another tenant. Reservations are a tenant's own booking, paid from a ClusterQueue's
quota: `jobs:write`, for the caller's tenant. Reading needs `clusters:read`; everyone sees a
cluster's flavors, ClusterQueues (with usage) and cohorts, but LocalQueues and reservations only of
their own tenant, unless they are admins, and a refusal names only what its caller may see.

Every command is one unit of work in system scope (the objects belong to the cluster, and the
refusals need every tenant's jobs), and refuses before writing anything. Removals keep references
whole: a flavor stays while a ClusterQueue or a cohort names it, a ClusterQueue while a LocalQueue
points at it (and so while any job is active in it, for a LocalQueue with active jobs stays too),
a cohort while it has member queues. A cohort whose children remain may go: they then name an
implicit cohort, as they may from the start (Kueue's parentName needs no object). The checks are
pure functions in `quota_rules`; how much of its quota each queue uses is one in `quota_usage`, of
a quota set, the active jobs and the reservations. A cluster's quota settings (is Kueue's fair
sharing on) are recorded here, not pushed: Kueue's controller configuration is the operator's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from domain.errors import FieldIssue, NotFound, ValidationFailed
from domain.model.audit import concerning
from domain.model.cluster import Cluster
from domain.model.events import ClusterChanged, ClusterChangeKind
from domain.model.ids import ClusterId, TenantId
from domain.model.job import JobPriority
from domain.model.principal import Principal, Scope
from domain.model.quota import (
    ClusterQueue,
    Cohort,
    LocalQueue,
    QuotaSet,
    QuotaSettings,
    ResourceFlavor,
    WorkloadPriorityClass,
    tenant_namespace,
)
from domain.model.reservation import CapacityReservation
from domain.ports.clock import Clock
from domain.ports.unit_of_work import TenantScope, UnitOfWork, UnitOfWorkFactory
from domain.services import quota_rules as rules
from domain.services.quota_defaults import default_quotas
from domain.services.quota_rules import (
    ClusterQueueSpec,
    CohortSpec,
    acting_for,
    in_use,
    require,
    sees,
    taken,
)
from domain.services.quota_usage import FlavorUsage, cluster_queue_usage


@dataclass(frozen=True)
class ClusterQuotas:
    """A cluster's quota objects as one principal may see them."""

    flavors: tuple[ResourceFlavor, ...]
    cluster_queues: tuple[ClusterQueue, ...]
    cohorts: tuple[Cohort, ...]
    local_queues: tuple[LocalQueue, ...]
    reservations: tuple[CapacityReservation, ...]
    usage: Mapping[str, tuple[FlavorUsage, ...]]
    """Per ClusterQueue name."""
    settings: QuotaSettings


def _local_queues_of(principal: Principal, tenant_id: TenantId | None) -> TenantId:
    """The tenant whose LocalQueues the principal manages (queues:write; another tenant's:
    admin), as what the operation concerns."""
    require(principal, Scope.QUEUES_WRITE)
    tenant = acting_for(principal, tenant_id, "local queues")
    concerning(tenant)
    return tenant


class QuotaService:
    def __init__(self, *, uow: UnitOfWorkFactory, clock: Clock) -> None:
        self._uow = uow
        self._clock = clock

    async def _commit(self, uow: UnitOfWork, cluster_id: ClusterId) -> None:
        """Commit a change of the cluster's quotas, with the event that has its timeline
        recomputed and the quotas put onto a real cluster (reactions)."""
        uow.record(ClusterChanged(ClusterChangeKind.QUOTAS, cluster_id))
        await uow.commit()

    @staticmethod
    async def _cluster(uow: UnitOfWork, cluster_id: ClusterId) -> Cluster:
        cluster = await uow.clusters.get(cluster_id)
        if cluster is None:
            raise NotFound("cluster", cluster_id)
        return cluster

    # --- resource flavors -----------------------------------------------------------------

    async def create_flavor(
        self, principal: Principal, *, cluster_id: ClusterId, name: str, node_labels: dict[str, str]
    ) -> ResourceFlavor:
        require(principal, Scope.CLUSTERS_WRITE)
        if issues := rules.name_issues(name) + rules.node_label_issues(node_labels):
            raise ValidationFailed(issues)
        now = self._clock.now()
        flavor = ResourceFlavor(cluster_id, name, dict(node_labels), now, now)
        async with self._uow(TenantScope.system()) as uow:
            await self._cluster(uow, cluster_id)
            if await uow.quotas.get_flavor(cluster_id=cluster_id, name=name) is not None:
                raise taken(f"resource flavor {name}")
            await uow.quotas.add_flavor(flavor)
            await self._commit(uow, cluster_id)
        return flavor

    async def update_flavor(
        self, principal: Principal, *, cluster_id: ClusterId, name: str, node_labels: dict[str, str]
    ) -> ResourceFlavor:
        require(principal, Scope.CLUSTERS_WRITE)
        if issues := rules.node_label_issues(node_labels):
            raise ValidationFailed(issues)
        async with self._uow(TenantScope.system()) as uow:
            found = await uow.quotas.get_flavor(cluster_id=cluster_id, name=name)
            if found is None:
                raise NotFound("resource flavor", name)
            flavor = replace(found, node_labels=dict(node_labels), updated_at=self._clock.now())
            await uow.quotas.update_flavor(flavor)
            await self._commit(uow, cluster_id)
        return flavor

    async def delete_flavor(
        self, principal: Principal, *, cluster_id: ClusterId, name: str
    ) -> ResourceFlavor:
        require(principal, Scope.CLUSTERS_WRITE)
        async with self._uow(TenantScope.system()) as uow:
            quotas = await uow.quotas.quota_set(cluster_id)
            found = next((f for f in quotas.flavors if f.name == name), None)
            if found is None:
                raise NotFound("resource flavor", name)
            users = [
                f"cluster queue {q.name}" for q in quotas.cluster_queues if name in q.flavor_names
            ]
            users += [
                f"cohort {c.name}"
                for c in quotas.cohorts
                if any(fq.flavor == name for g in c.resource_groups for fq in g.flavors)
            ]
            if users:
                raise in_use(f"resource flavor {name}", users)
            await uow.quotas.delete_flavor(cluster_id=cluster_id, name=name)
            await self._commit(uow, cluster_id)
        return found

    # --- cluster queues -------------------------------------------------------------------

    async def _checked(self, uow: UnitOfWork, spec: ClusterQueueSpec) -> QuotaSet:
        await self._cluster(uow, spec.cluster_id)
        quotas = await uow.quotas.quota_set(spec.cluster_id)
        issues = rules.cluster_queue_issues(
            spec,
            flavors={f.name for f in quotas.flavors},
            cohort_exists=any(c.name == spec.cohort for c in quotas.cohorts),
        )
        if issues:
            raise ValidationFailed(issues)
        return quotas

    async def create_cluster_queue(
        self, principal: Principal, spec: ClusterQueueSpec
    ) -> ClusterQueue:
        require(principal, Scope.CLUSTERS_WRITE)
        now = self._clock.now()
        async with self._uow(TenantScope.system()) as uow:
            quotas = await self._checked(uow, spec)
            if quotas.cluster_queue(spec.name) is not None:
                raise taken(f"cluster queue {spec.name}")
            queue = spec.build(created_at=now, updated_at=now)
            await uow.quotas.add_cluster_queue(queue)
            await self._commit(uow, spec.cluster_id)
        return queue

    async def update_cluster_queue(
        self, principal: Principal, spec: ClusterQueueSpec
    ) -> ClusterQueue:
        require(principal, Scope.CLUSTERS_WRITE)
        async with self._uow(TenantScope.system()) as uow:
            quotas = await self._checked(uow, spec)
            found = quotas.cluster_queue(spec.name)
            if found is None:
                raise NotFound("cluster queue", spec.name)
            queue = spec.build(created_at=found.created_at, updated_at=self._clock.now())
            await uow.quotas.update_cluster_queue(queue)
            await self._commit(uow, spec.cluster_id)
        return queue

    async def delete_cluster_queue(
        self, principal: Principal, *, cluster_id: ClusterId, name: str
    ) -> ClusterQueue:
        require(principal, Scope.CLUSTERS_WRITE)
        seen = sees(principal)
        async with self._uow(TenantScope.system()) as uow:
            quotas = await uow.quotas.quota_set(cluster_id)
            found = quotas.cluster_queue(name)
            if found is None:
                raise NotFound("cluster queue", name)
            users = [q for q in quotas.local_queues if q.cluster_queue == name]
            if users:  # and so every active job in it: a LocalQueue with jobs stays
                raise in_use(
                    f"cluster queue {name}",
                    [f"local queue {q.namespace}/{q.name}" for q in users if seen(q.tenant_id)],
                    hidden=sum(1 for q in users if not seen(q.tenant_id)),
                )
            await uow.quotas.delete_cluster_queue(cluster_id=cluster_id, name=name)
            await self._commit(uow, cluster_id)
        return found

    # --- local queues ---------------------------------------------------------------------

    async def create_local_queue(
        self,
        principal: Principal,
        *,
        cluster_id: ClusterId,
        name: str,
        cluster_queue: str,
        tenant_id: TenantId | None = None,
    ) -> LocalQueue:
        tenant = _local_queues_of(principal, tenant_id)
        if issues := rules.name_issues(name):
            raise ValidationFailed(issues)
        queue = LocalQueue(
            cluster_id, name, tenant_namespace(tenant), tenant, cluster_queue, self._clock.now()
        )
        async with self._uow(TenantScope.system()) as uow:
            await self._cluster(uow, cluster_id)
            if (
                await uow.quotas.get_cluster_queue(cluster_id=cluster_id, name=cluster_queue)
                is None
            ):
                raise ValidationFailed.single(
                    "cluster_queue",
                    f"no cluster queue {cluster_queue} on this cluster",
                    "NOT_FOUND",
                )
            if await uow.quotas.get_local_queue(
                cluster_id=cluster_id, namespace=queue.namespace, name=name
            ):
                raise taken(f"local queue {queue.namespace}/{name}")
            await uow.quotas.add_local_queue(queue)
            await self._commit(uow, cluster_id)
        return queue

    async def delete_local_queue(
        self,
        principal: Principal,
        *,
        cluster_id: ClusterId,
        name: str,
        tenant_id: TenantId | None = None,
    ) -> LocalQueue:
        tenant = _local_queues_of(principal, tenant_id)
        namespace = tenant_namespace(tenant)
        async with self._uow(TenantScope.system()) as uow:
            found = await uow.quotas.get_local_queue(
                cluster_id=cluster_id, namespace=namespace, name=name
            )
            if found is None:
                raise NotFound("local queue", f"{namespace}/{name}")
            jobs = [
                j
                for j in await uow.jobs.active_on_cluster(cluster_id)
                if j.queue_name == name and tenant_namespace(j.tenant_id) == namespace
            ]
            if jobs:
                named = [
                    f"job {j.name}" for j in jobs if principal.may_see(j.tenant_id, j.project_id)
                ]
                raise in_use(
                    f"local queue {namespace}/{name}",
                    named[:5],
                    hidden=len(jobs) - len(named),
                    whose="other projects",
                )
            await uow.quotas.delete_local_queue(
                cluster_id=cluster_id, namespace=namespace, name=name
            )
            await self._commit(uow, cluster_id)
        return found

    # --- cohorts --------------------------------------------------------------------------

    async def _checked_cohort(self, uow: UnitOfWork, spec: CohortSpec) -> QuotaSet:
        await self._cluster(uow, spec.cluster_id)
        quotas = await uow.quotas.quota_set(spec.cluster_id)
        issues = rules.cohort_issues(
            spec,
            flavors={f.name for f in quotas.flavors},
            parents={c.name: c.parent for c in quotas.cohorts},
        )
        if issues:
            raise ValidationFailed(issues)
        return quotas

    async def create_cohort(self, principal: Principal, spec: CohortSpec) -> Cohort:
        require(principal, Scope.CLUSTERS_WRITE)
        cohort = spec.build(created_at=self._clock.now())
        async with self._uow(TenantScope.system()) as uow:
            quotas = await self._checked_cohort(uow, spec)
            if quotas.cohort(spec.name) is not None:
                raise taken(f"cohort {spec.name}")
            await uow.quotas.add_cohort(cohort)
            await self._commit(uow, spec.cluster_id)
        return cohort

    async def update_cohort(self, principal: Principal, spec: CohortSpec) -> Cohort:
        require(principal, Scope.CLUSTERS_WRITE)
        async with self._uow(TenantScope.system()) as uow:
            quotas = await self._checked_cohort(uow, spec)
            found = quotas.cohort(spec.name)
            if found is None:
                raise NotFound("cohort", spec.name)
            cohort = spec.build(created_at=found.created_at)
            await uow.quotas.update_cohort(cohort)
            await self._commit(uow, spec.cluster_id)
        return cohort

    async def delete_cohort(
        self, principal: Principal, *, cluster_id: ClusterId, name: str
    ) -> Cohort:
        require(principal, Scope.CLUSTERS_WRITE)
        async with self._uow(TenantScope.system()) as uow:
            quotas = await uow.quotas.quota_set(cluster_id)
            found = quotas.cohort(name)
            if found is None:
                raise NotFound("cohort", name)
            if members := quotas.members(name):
                raise in_use(f"cohort {name}", [f"cluster queue {q.name}" for q in members])
            await uow.quotas.delete_cohort(cluster_id=cluster_id, name=name)
            await self._commit(uow, cluster_id)
        return found

    # --- a cluster's settings -------------------------------------------------------------

    async def update_quota_settings(
        self, principal: Principal, settings: QuotaSettings
    ) -> QuotaSettings:
        """Record what the cluster's Kueue is configured with (budcluster does not configure
        Kueue's controller: the operator keeps the two the same)."""
        require(principal, Scope.CLUSTERS_WRITE)
        async with self._uow(TenantScope.system()) as uow:
            await self._cluster(uow, settings.cluster_id)
            await uow.quotas.save_quota_settings(settings)
            await self._commit(uow, settings.cluster_id)
        return settings

    # --- priority classes -----------------------------------------------------------------

    async def priority_classes(self, principal: Principal) -> list[WorkloadPriorityClass]:
        require(principal, Scope.CLUSTERS_READ)
        async with self._uow(TenantScope.system()) as uow:
            return await uow.quotas.priority_classes()

    async def update_priority_class(
        self,
        principal: Principal,
        priority: JobPriority,
        *,
        value: int | None = None,
        description: str | None = None,
    ) -> WorkloadPriorityClass:
        require(principal, Scope.CLUSTERS_WRITE)
        async with self._uow(TenantScope.system()) as uow:
            classes = await uow.quotas.priority_classes(for_update=True)
            current = next(pc for pc in classes if pc.priority is priority)
            issues: list[FieldIssue] = rules.description_issues(description)
            if value is not None:
                issues += rules.priority_value_issues(classes, priority, value)
            if issues:
                raise ValidationFailed(issues)
            changed = replace(
                current,
                value=current.value if value is None else value,
                description=current.description if description is None else description,
                updated_at=self._clock.now(),
            )
            await uow.quotas.update_priority_class(changed)
            await uow.commit()
        return changed

    # --- reads ----------------------------------------------------------------------------

    async def overview(
        self, principal: Principal, cluster_ids: Sequence[ClusterId]
    ) -> dict[ClusterId, ClusterQuotas]:
        """Each cluster's quota objects as `principal` may see them, with every ClusterQueue's
        usage; a constant number of statements for any number of clusters."""
        require(principal, Scope.CLUSTERS_READ)
        now = self._clock.now()
        async with self._uow(TenantScope.system()) as uow:
            sets = await uow.quotas.quota_sets(cluster_ids)
            reservations = await uow.reservations.of_clusters(cluster_ids, ending_after=now)
            jobs = await uow.jobs.active_on_clusters(cluster_ids)

        visible = sees(principal)
        result: dict[ClusterId, ClusterQuotas] = {}
        for cluster_id, quotas in sets.items():
            booked = [r for r in reservations if r.cluster_id == cluster_id]
            result[cluster_id] = ClusterQuotas(
                flavors=quotas.flavors,
                cluster_queues=quotas.cluster_queues,
                cohorts=quotas.cohorts,
                local_queues=tuple(q for q in quotas.local_queues if visible(q.tenant_id)),
                reservations=tuple(r for r in booked if visible(r.tenant_id)),
                usage=cluster_queue_usage(
                    quotas, (j for j in jobs if j.cluster_id == cluster_id), booked, now
                ),
                settings=QuotaSettings(cluster_id, fair_sharing=quotas.fair_sharing),
            )
        return result

    # --- defaults -------------------------------------------------------------------------

    async def ensure_defaults(self, cluster: Cluster, *, uow: UnitOfWork | None = None) -> bool:
        """Give a cluster that has no ClusterQueue the default flavors and ClusterQueue (see
        `quota_defaults.default_quotas`); True if it did. Inside `uow` when given (the caller
        commits), else in a unit of work of its own."""
        if uow is not None:
            return await self._install_defaults(uow, cluster)
        async with self._uow(TenantScope.system()) as own:
            installed = await self._install_defaults(own, cluster)
            if installed:
                await own.commit()
        return installed

    async def _install_defaults(self, uow: UnitOfWork, cluster: Cluster) -> bool:
        existing = await uow.quotas.quota_set(cluster.id)
        if existing.cluster_queues:
            return False
        flavors, queue = default_quotas(cluster, self._clock.now())
        have = {f.name for f in existing.flavors}
        for flavor in flavors:
            if flavor.name not in have:
                await uow.quotas.add_flavor(flavor)
        await uow.quotas.add_cluster_queue(queue)
        return True
