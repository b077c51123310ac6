"""Submitting to a fleet: each member's offer for the job, and the job handed to the best.

An offer is the member's preview of the job (`TimelineService.preview`: the same estimate its
timeline makes) with its start window at `DISPATCH_CONFIDENCE` and its load; a member that cannot
take the job says why (the field problems its submission would have: a GPU type it lacks, a node
too small, a cluster that does not answer). `rank` (`domain.scheduling.dispatch`) orders the
offers; the job is submitted to the first, as a job of that member with its fleet set, in the
fleet's LocalQueue. When no member can take it, the refusal names each member's problems.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from domain.errors import FieldIssue, NotFound, ValidationFailed
from domain.model.cluster import Cluster, ClusterStatus
from domain.model.deployment import Deployment
from domain.model.drain import holding_cluster
from domain.model.events import ClusterChanged, ClusterChangeKind
from domain.model.fleet import Fleet
from domain.model.ids import ClusterId, FleetId
from domain.model.job import DeploymentType, Job, JobType, Resources
from domain.model.principal import Principal
from domain.model.quota import DEFAULT_QUEUE, LocalQueue, tenant_namespace
from domain.ports.clock import Clock
from domain.ports.unit_of_work import TenantScope, UnitOfWorkFactory
from domain.scheduling.dispatch import DISPATCH_CONFIDENCE, Offer, rank
from domain.services.deployments import DeploymentRequest, DeploymentService, validate_deployment
from domain.services.fleets import members_of
from domain.services.jobs import JobService
from domain.services.submission import JobSubmission
from domain.services.timeline import Preview, TimelineService


@dataclass(frozen=True)
class FleetOffers:
    """Every member's offer for a job, best first (those that cannot take it last), and the
    preview of each member that can."""

    fleet: Fleet
    ranked: tuple[Offer, ...]
    refused: tuple[Offer, ...]
    previews: dict[str, Preview]
    """By cluster id (text)."""

    @property
    def chosen(self) -> Offer | None:
        return self.ranked[0] if self.ranked else None


def refusal(offers: FleetOffers) -> ValidationFailed:
    """No member can take the job: the problems every member has as they are, the others
    once per member, said with its name."""
    refused = offers.refused
    if not refused:
        return ValidationFailed(
            [FieldIssue("fleet_id", f"fleet {offers.fleet.name} has no members", "NO_MEMBERS")]
        )
    common = set(refused[0].refused)
    for offer in refused[1:]:
        common &= set(offer.refused)
    issues = [i for i in refused[0].refused if i in common]
    for offer in refused:
        issues += [
            FieldIssue(i.field, f"on cluster {offer.name}: {i.message}", i.code)
            for i in offer.refused
            if i not in common
        ]
    return ValidationFailed(issues)


class Dispatcher:
    def __init__(
        self,
        *,
        uow: UnitOfWorkFactory,
        clock: Clock,
        jobs: JobService,
        timeline: TimelineService,
        deployments: DeploymentService,
    ) -> None:
        self._uow = uow
        self._clock = clock
        self._jobs = jobs
        self._timeline = timeline
        self._deployments = deployments

    async def fleet(self, fleet_id: FleetId) -> tuple[Fleet, list[Cluster]]:
        """The fleet and its member clusters; a fleet that is not found is the `fleet_id`'s
        problem."""
        async with self._uow(TenantScope.system()) as uow:
            fleet = await uow.fleets.get(fleet_id)
            if fleet is None:
                raise ValidationFailed.single("fleet_id", "no such fleet", code="NOT_FOUND")
            clusters = list((await uow.clusters.get_many(list(fleet.members))).values())
        return fleet, members_of(fleet, clusters)

    async def offers(self, principal: Principal, sub: JobSubmission) -> FleetOffers:
        """Each member's offer for `sub` (its `fleet_id` set), now."""
        assert sub.fleet_id is not None
        fleet, members = await self.fleet(sub.fleet_id)
        if sub.queue_name not in (DEFAULT_QUEUE, fleet.local_queue):
            raise ValidationFailed.single(
                "queue_name",
                f"a job of fleet {fleet.name} goes to its LocalQueue {fleet.local_queue}",
                code="FLEET_QUEUE",
            )
        offers: list[Offer] = []
        previews: dict[str, Preview] = {}
        for cluster in members:
            offer, preview = await self._offer(principal, sub, fleet, cluster)
            offers.append(offer)
            if preview is not None:
                previews[str(cluster.id)] = preview
        now = self._clock.now()
        ranked = rank(offers, now, deadline=sub.deadline)
        refused = tuple(o for o in offers if not o.takes)
        return FleetOffers(fleet, tuple(ranked), refused, previews)

    async def deploy(
        self, principal: Principal, req: DeploymentRequest, fleet_id: FleetId
    ) -> Deployment:
        """Deploy on the member where the deployment's first replica starts soonest (every
        replica runs on that member: its endpoint is one cluster's; replicas do not move)."""
        fleet, members = await self.fleet(fleet_id)
        offers: list[Offer] = []
        for cluster in members:
            issues = validate_deployment(replace(req, cluster_id=cluster.id), cluster)
            if issues:
                offers.append(Offer(cluster.id, cluster.name, refused=tuple(issues)))
                continue
            replica = JobSubmission(
                name=f"{req.name}-0",
                project_id=req.project_id,
                cluster_id=cluster.id,
                job_type=JobType.SERVICE,
                deployment_type=DeploymentType.MODEL,
                resources=Resources(
                    gpu_type=req.gpu_type,
                    gpu_count=req.engine_args.gpus,
                    cpu_cores=req.cpu_cores,
                    memory_gb=req.memory_gb,
                ),
                priority=req.priority,
                fleet_id=fleet.id,
            )
            offer, _ = await self._offer(principal, replica, fleet, cluster, DEFAULT_QUEUE)
            offers.append(offer)
        ranked = rank(offers, self._clock.now())
        if not ranked:
            raise refusal(FleetOffers(fleet, (), tuple(offers), {}))
        return await self._deployments.deploy(
            principal, replace(req, cluster_id=ranked[0].cluster_id)
        )

    async def _offer(
        self,
        principal: Principal,
        sub: JobSubmission,
        fleet: Fleet,
        cluster: Cluster,
        queue: str | None = None,
    ) -> tuple[Offer, Preview | None]:
        """`queue`: the LocalQueue it would go to (the fleet's by default)."""
        if cluster.status is not ClusterStatus.AVAILABLE:
            problem = FieldIssue(
                "cluster_id",
                f"cluster {cluster.name} is {cluster.status.value}",
                "CLUSTER_NOT_AVAILABLE",
            )
            return Offer(cluster.id, cluster.name, refused=(problem,)), None
        async with self._uow(TenantScope.system()) as uow:
            whole = holding_cluster(await uow.drains.on([cluster.id]))
        if whole is not None:
            problem = FieldIssue(
                "cluster_id", f"cluster {cluster.name} is drained: {whole.reason}", "DRAINED"
            )
            return Offer(cluster.id, cluster.name, refused=(problem,)), None
        member = replace(
            sub, cluster_id=cluster.id, fleet_id=fleet.id, queue_name=queue or fleet.local_queue
        )
        try:
            preview = await self._timeline.preview(principal, member)
        except ValidationFailed as exc:
            return Offer(cluster.id, cluster.name, refused=exc.issues), None
        except NotFound as exc:  # the cluster went meanwhile
            problem = FieldIssue("cluster_id", exc.message, "NOT_FOUND")
            return Offer(cluster.id, cluster.name, refused=(problem,)), None
        window = await self._timeline.start_window(
            cluster.id, preview.start, DISPATCH_CONFIDENCE, wide=sub.resources.total_pods > 1
        )
        offer = Offer(
            cluster.id,
            cluster.name,
            start=preview.start,
            end=preview.end,
            window=None if window is None else (window.earliest, window.latest),
            cost=preview.estimated_cost,
            load=preview.load,
            evicts=preview.evicts,
            reason=preview.reason,
            warnings=preview.warnings,
        )
        return offer, preview

    async def submit(self, principal: Principal, sub: JobSubmission) -> Job:
        """Submit `sub` to its fleet's best member (a repeated idempotency key answers with the
        first job, wherever it went)."""
        assert sub.fleet_id is not None
        if sub.idempotency_key is not None:
            existing = await self._jobs.by_idempotency_key(
                principal, sub.project_id, sub.idempotency_key
            )
            if existing is not None:
                return existing
        offers = await self.offers(principal, sub)
        chosen = offers.chosen
        if chosen is None:
            raise refusal(offers)
        fleet = offers.fleet
        why = _why(chosen, offers, self._clock.now(), deadline=sub.deadline)
        # MultiKueue runs batch Jobs and JobSets; a SERVICE (a Helm release) goes to its member
        via = fleet.manager_cluster_id if sub.job_type is not JobType.SERVICE else None
        member = replace(
            sub,
            cluster_id=chosen.cluster_id,
            queue_name=fleet.local_queue,
            dispatched_via=via,
            status_message=f"dispatched by fleet {fleet.name} to cluster {chosen.name}: {why}",
        )
        if via is not None:
            await self._manager_queue(principal, fleet, via)
        return await self._jobs.submit(principal, member)

    async def _manager_queue(self, principal: Principal, fleet: Fleet, manager: ClusterId) -> None:
        """The tenant's LocalQueue of the fleet on MultiKueue's manager, where its jobs' objects
        go (made on first use, as on a cluster, and put onto the manager with its quotas)."""
        namespace = tenant_namespace(principal.tenant_id)
        async with self._uow(TenantScope.system()) as uow:
            found = await uow.quotas.get_local_queue(
                cluster_id=manager, namespace=namespace, name=fleet.local_queue
            )
            if found is not None:
                return
            queue = LocalQueue(
                cluster_id=manager,
                name=fleet.local_queue,
                namespace=namespace,
                tenant_id=principal.tenant_id,
                cluster_queue=fleet.cluster_queue,
                created_at=self._clock.now(),
            )
            await uow.quotas.add_local_queue(queue, if_absent=True)
            uow.record(ClusterChanged(ClusterChangeKind.QUOTAS, manager))
            await uow.commit()


def _why(chosen: Offer, offers: FleetOffers, now: datetime, *, deadline: datetime | None) -> str:
    """Why the chosen member, in a few words (the job's status message at submission)."""
    if deadline is not None and chosen.ends_by(deadline):
        return "the cheapest member that meets its deadline"
    others = [o for o in offers.ranked if o is not chosen]
    if not others:
        return "the only member that can take it"
    runner = others[0]
    if chosen.start is not None and runner.start is not None and chosen.start < runner.start:
        ahead = int((runner.start - chosen.start).total_seconds())
        return f"starts soonest ({ahead} s before cluster {runner.name})"
    return "starts as soon as any, at the lowest cost"
