"""Deployments that scale themselves: their bounds set, their load read, their replicas changed.

`autoscale` reads a deployment's load from its endpoint (`ServingEndpoints.load`, outside any
unit of work: it may ask the cluster), then, with the deployment held, asks the rule
(`domain.model.autoscaling.decide`) for a replica count and makes or cancels replica jobs to
match, as `scaleDeployment` would, recording the step (SCALED, with the view after it). `wake`
is the endpoint's call when a request comes while no replica serves. Replicas made here are the
deployment's tenant's (made by the tenant's default scopes, as a drain's replacements are).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable

from domain.errors import Conflict, DomainError, ValidationFailed
from domain.model.autoscaling import Autoscaling, ScalingState, ScalingStep, decide
from domain.model.cluster import Cluster
from domain.model.deployment import Deployment
from domain.model.ids import ClusterId, DeploymentId, JobId
from domain.model.job import Job, JobStatus
from domain.model.principal import TENANT_DEFAULT_SCOPES, Principal
from domain.ports.clock import Clock
from domain.ports.serving import ServingEndpoints
from domain.ports.unit_of_work import TenantScope, UnitOfWork, UnitOfWorkFactory
from domain.services.deployments import DeploymentService, autoscaling_field_issues

log = logging.getLogger(__name__)

WAKE_REASON = "a request came while no replica served"
MAX_LISTED = 200


class Autoscaler:
    def __init__(
        self,
        *,
        uow: UnitOfWorkFactory,
        clock: Clock,
        deployments: DeploymentService,
        endpoints: ServingEndpoints,
    ) -> None:
        self._uow = uow
        self._clock = clock
        self._deployments = deployments
        self._endpoints = endpoints

    async def configure(
        self, principal: Principal, deployment_id: DeploymentId, autoscaling: Autoscaling | None
    ) -> Deployment:
        """Set (or, with None, turn off) a deployment's autoscaling; replicas outside the new
        bounds are brought within them at once (a step)."""
        now = self._clock.now()
        async with self._uow(TenantScope.of(principal)) as uow:
            d, jobs = await self._deployments.held(uow, principal, deployment_id, "is stopped")
            cluster = await uow.clusters.get(d.cluster_id)
            if autoscaling is not None:
                real = cluster is not None and cluster.is_real
                if issues := autoscaling_field_issues(autoscaling, real_cluster=real):
                    raise ValidationFailed(issues)
            d.autoscaling, d.scaling_state, d.updated_at = autoscaling, ScalingState(), now
            step = None
            if autoscaling is not None:
                within = min(autoscaling.max_replicas, max(autoscaling.min_replicas, d.replicas))
                if within != d.replicas:
                    bounds = f"{autoscaling.min_replicas} to {autoscaling.max_replicas}"
                    step = ScalingStep(now, d.replicas, within, f"bounds set to {bounds}")
                    owner = principal.acting_for(d.tenant_id)
                    await self._take(uow, owner, d, jobs, step)
            endpoint = await self._deployments.endpoint_state(uow, d, jobs)
            await self._deployments.settle(uow, d, jobs, endpoint, now, step)
        return d

    async def wake(self, deployment_id: DeploymentId) -> bool:
        """A request came to the endpoint of a deployment at zero replicas: start one (its
        min_replicas, if more). True when a replica is wanted now (started here or before);
        False when the deployment does not scale from zero or none could be started."""
        now = self._clock.now()
        try:
            async with self._uow(TenantScope.system()) as uow:
                d = await uow.deployments.get(deployment_id, for_update=True)
                if d is None or d.stopped or d.autoscaling is None:
                    return False
                if d.replicas > 0:
                    return True
                jobs = await uow.jobs.get_many(list(d.replica_jobs), for_update=True)
                step = ScalingStep(now, 0, max(1, d.autoscaling.min_replicas), WAKE_REASON)
                await self._take(uow, _owner(d), d, jobs, step)
                endpoint = await self._deployments.endpoint_state(uow, d, jobs)
                await self._deployments.settle(uow, d, jobs, endpoint, now, step)
        except Conflict:
            return await self._wanted(deployment_id)  # another wake (or scale) wrote first
        except DomainError as exc:  # e.g. its cluster is gone, or a budget refuses
            log.warning("deployment %s could not be woken: %s", deployment_id, exc)
            return False
        return True

    async def autoscale(self, deployment_id: DeploymentId) -> ScalingStep | None:
        """Read the deployment's load and take the step its rule asks for; the step, or None."""
        async with self._uow(TenantScope.system()) as uow:
            d = await uow.deployments.get(deployment_id)
            if d is None or d.stopped or d.autoscaling is None:
                return None
            cluster = await uow.clusters.get(d.cluster_id)
            jobs = await uow.jobs.get_many(list(d.replica_jobs))
        if cluster is None:
            return None
        running = _running(d, jobs)
        load = await self._endpoints.load(cluster, d, running)
        if load is None:
            return None
        # its idle time counts from when it began to serve, not from while a replica started
        starts = [s for j in running if (s := jobs[j].actual_start) is not None]
        now = self._clock.now()
        async with self._uow(TenantScope.system()) as uow:
            d = await uow.deployments.get(deployment_id, for_update=True)
            if d is None or d.stopped or d.autoscaling is None:
                return None
            decision = decide(
                d.autoscaling,
                d.replicas,
                load,
                slots=d.engine_args.max_num_seqs,
                state=d.scaling_state,
                quiet_since=max([d.quiet_since, *starts]),
                now=now,
            )
            if decision.replicas == d.replicas:
                if decision.state != d.scaling_state:
                    d.scaling_state = decision.state
                    await uow.deployments.save(d)
                    await uow.commit()
                return None
            jobs = await uow.jobs.get_many(list(d.replica_jobs), for_update=True)
            step = ScalingStep(
                now, d.replicas, decision.replicas, decision.reason, decision.metric_value
            )
            await self._take(uow, _owner(d), d, jobs, step)
            endpoint = await self._deployments.endpoint_state(uow, d, jobs)
            await self._deployments.settle(uow, d, jobs, endpoint, now, step)
        return step

    async def autoscale_all(self, here: Callable[[Deployment, Cluster], bool]) -> int:
        """`autoscale` each deployment that scales itself and that `here` says this process
        looks after (a simulated endpoint's load is known only where it is served); the steps
        taken."""
        async with self._uow(TenantScope.system()) as uow:
            clusters = {c.id: c for c in await uow.clusters.all()}
            ids = [
                d.id
                for d in await uow.deployments.autoscaled()
                if (cluster := clusters.get(d.cluster_id)) is not None and here(d, cluster)
            ]
        steps = 0
        for deployment_id in ids:
            try:
                steps += await self.autoscale(deployment_id) is not None
            except Conflict:  # changed by someone else meanwhile: the next round looks again
                continue
            except DomainError as exc:
                log.warning("autoscaling deployment %s: %s", deployment_id, exc)
        return steps

    async def steps(
        self, principal: Principal, cluster_id: ClusterId
    ) -> list[tuple[ScalingStep, Deployment]]:
        """The steps of the deployments on the cluster that `principal` may see, newest first
        (at most MAX_LISTED)."""
        async with self._uow(TenantScope.of(principal)) as uow:
            found = await uow.deployments.on_cluster(cluster_id, limit=MAX_LISTED)
        steps = [
            (step, d)
            for d in found
            if principal.may_see(d.tenant_id, d.project_id)
            for step in d.scaling_steps
        ]
        steps.sort(key=lambda pair: pair[0].at, reverse=True)
        return steps[:MAX_LISTED]

    async def _take(
        self,
        uow: UnitOfWork,
        owner: Principal,
        d: Deployment,
        jobs: dict[JobId, Job],
        step: ScalingStep,
    ) -> None:
        reason = f"deployment scaled down: {step.reason}"
        added = await self._deployments.resize(uow, owner, d, jobs, step.to_replicas, reason)
        d.scaled_itself(step, added)

    async def _wanted(self, deployment_id: DeploymentId) -> bool:
        with contextlib.suppress(DomainError):
            async with self._uow(TenantScope.system()) as uow:
                d = await uow.deployments.get(deployment_id)
                return d is not None and not d.stopped and d.replicas > 0
        return False


def _owner(d: Deployment) -> Principal:
    return Principal(d.tenant_id, TENANT_DEFAULT_SCOPES)


def _running(d: Deployment, jobs: dict[JobId, Job]) -> list[JobId]:
    return [j for j in d.replica_jobs if j in jobs and jobs[j].status is JobStatus.RUNNING]
