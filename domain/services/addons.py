"""Cluster add-ons: the operator asks, a task installs what the cluster's health finds missing.

`request` (the operator only) checks what is asked: a mirror must be an https or oci URL the
outbound policy clears (like every URL a caller gives), an add-on whose pinned version does not
support the cluster's Kubernetes is refused naming it (`addons.N`), and so is Kueue when the
cluster runs a Kueue outside the range budcluster supports (budcluster does not replace a Kueue
it did not install). What the last health check found is left as it is (asking for it is not an
error: it answers INSTALLED, origin FOUND), and so is what is already asked for (unless that
request has not moved for `ABANDONED_AFTER`: its task is gone, and asking again replaces it);
an add-on a requested one needs is asked for with it (the GPU Operator needs Node Feature
Discovery). Each add-on then gets REQUESTED and a task of its own, keyed by the request,
committed first. An add-on budcluster installed (origin HELM) at another version than its pin
now (an earlier budcluster's), or whose upgrade failed, is upgraded when asked for again
(`upgrading_from`): the task then upgrades the release in place (`helm upgrade --install`),
its own Kueue even when that one is outside the range; one budcluster did not install is never
touched.

The task (`install`) reads the cluster again: it waits while the cluster is being connected (a
cluster registered with add-ons), finds the add-on there after all (FOUND) or installs the
pinned chart as a Helm release in the add-on's namespace (INSTALLING, then INSTALLED), retrying
when Helm or the cluster can't be reached and FAILED with Helm's reason when the chart is
refused or the tries run out. Without waiting for the pods: the next health check (queued at
once) says how the add-on runs. A simulated cluster has everything built in: nothing is stored
or installed for it.

`remove` (the operator only) uninstalls budcluster's own releases (origin HELM) and nothing
else: REMOVING and a task, as an install; the task (`install` again, which sees REMOVING) runs
`helm uninstall`, forgets the request (MISSING) and has health read again. Kueue and the GPU
Operator are refused while jobs are active on the cluster, and NFD while budcluster's GPU
Operator stays.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime, timedelta

from domain.backoff import backoff_seconds
from domain.errors import Conflict, FieldIssue, Forbidden, NotFound, ValidationFailed
from domain.model.addons import (
    CHARTS,
    UNSUPPORTED_VERSION,
    Addon,
    AddonInstall,
    AddonOrigin,
    AddonState,
    addon_view,
    kubernetes_problem,
    kueue_problem,
    upgrading_from,
)
from domain.model.cluster import Cluster, ClusterStatus
from domain.model.ids import ClusterId
from domain.model.principal import Principal, Scope
from domain.ports.clock import Clock
from domain.ports.gateways import GatewayUnavailable
from domain.ports.helm import HelmReleases, ReleaseRejected, ReleaseSpec
from domain.ports.tasks import RetryTask, TaskQueue
from domain.ports.unit_of_work import TenantScope, UnitOfWork, UnitOfWorkFactory
from domain.services import task_names
from domain.services.destinations import Destinations

log = logging.getLogger(__name__)

INSTALL_TRIES = 8
"""Tries of one add-on's task (workers.tasks gives it as many)."""
CONNECTING_WAIT_SECONDS = 5.0
PENDING = (AddonState.REQUESTED, AddonState.INSTALLING)
ABANDONED_AFTER = timedelta(minutes=15)
"""A request REQUESTED or INSTALLING that has not moved for this long has no task left (its
task was never queued, or its worker died past arq's tries): asking again replaces it. The
task moves the request at least every backoff (at most `domain.backoff.CAP_SECONDS`, 300 s)
plus one try (the worker's 30 s timeout), 330 s; this is well over twice that, so a task still
alive is never replaced."""


class AddonService:
    def __init__(
        self,
        *,
        uow: UnitOfWorkFactory,
        clock: Clock,
        tasks: TaskQueue,
        destinations: Destinations,
        releases: Callable[[ClusterId], HelmReleases] | None = None,
        health_changed: Callable[[ClusterId], Awaitable[None]] | None = None,
        backoff: Callable[[int], float] = backoff_seconds,
    ) -> None:
        self._uow = uow
        self._clock = clock
        self._tasks = tasks
        self._destinations = destinations
        self._releases = releases
        self._health_changed = health_changed
        """Told after a release is installed: the cluster's health is read again (the registry
        queues a connection)."""
        self._backoff = backoff

    # --- the operator's request (API) ---------------------------------------------------------

    async def check(
        self,
        principal: Principal,
        addons: Sequence[Addon],
        mirror: str | None,
        mirror_field: str = "mirror",
    ) -> list[Addon]:
        """What asking for `addons` (from `mirror`) means, before any cluster is read: the
        add-ons with those they need, in installation order. Raises Forbidden (not the
        operator) or ValidationFailed naming `addons` or `mirror`."""
        if not principal.has(Scope.CLUSTERS_WRITE):
            raise Forbidden("installing cluster add-ons is the operator's (clusters:write)")
        issues: list[FieldIssue] = []
        if not addons:
            issues.append(FieldIssue("addons", "name at least one add-on", "REQUIRED"))
        elif len(set(addons)) != len(addons):
            issues.append(FieldIssue("addons", "names an add-on twice", "DUPLICATE"))
        if mirror is not None:
            urls = {mirror_field: mirror}
            issues += await self._destinations.issues(urls, schemes=("https", "oci"))
        if issues:
            raise ValidationFailed(issues)
        wanted = {n for a in addons for n in (*CHARTS[a].needs, a)}
        return [a for a in Addon if a in wanted]  # dependencies first: the enum's order

    async def request(
        self,
        principal: Principal,
        cluster_id: ClusterId,
        addons: Sequence[Addon],
        mirror: str | None = None,
        mirror_field: str = "mirror",
    ) -> Cluster:
        """Ask for `addons` on the cluster (module doc); returns the cluster (`views` of it
        with `installs` says where each add-on stands)."""
        wanted = await self.check(principal, addons, mirror, mirror_field)
        now = self._clock.now()
        queued: list[AddonInstall] = []
        async with self._uow(TenantScope.system()) as uow:
            cluster, before = await _asked_of(uow, cluster_id)
            if not cluster.is_real:
                return cluster  # everything built in: nothing to store, nothing to install
            upgrades = {a: old for a in wanted if (old := upgrading_from(before.get(a), CHARTS[a]))}
            ours = {a for a, i in before.items() if i.origin is AddonOrigin.HELM}
            issues = self._refusals(cluster, list(addons), wanted, ours)
            issues += [
                FieldIssue(_field(list(addons), a), "being removed: wait for it", "IN_PROGRESS")
                for a in wanted
                if (i := before.get(a)) is not None
                and i.state is AddonState.REMOVING
                and not _abandoned(i, now)
            ]
            if issues:
                raise ValidationFailed(issues)
            for addon in wanted:
                chart = CHARTS[addon]
                earlier = before.get(addon)
                state = addon_view(chart, cluster.health, earlier).state
                if state is AddonState.INSTALLED and addon not in upgrades:
                    continue  # there already: nothing more to do
                if state in PENDING and not _abandoned(earlier, now):
                    continue  # on its way: its task runs
                install = AddonInstall(
                    cluster_id=cluster_id,
                    addon=addon,
                    state=AddonState.REQUESTED,
                    request_id=uuid.uuid4().hex,
                    requested_at=now,
                    requested_by=_actor(principal),
                    updated_at=now,
                    chart_version=chart.version,
                    repository=mirror or chart.repository,
                    origin=AddonOrigin.HELM,
                    upgrade_from=upgrades.get(addon),
                )
                await uow.addons.put(install)
                before[addon] = install
                queued.append(install)
            await uow.commit()
        await self._enqueue(cluster_id, queued)
        return cluster

    async def remove(
        self, principal: Principal, cluster_id: ClusterId, addons: Sequence[Addon]
    ) -> Cluster:
        """Uninstall budcluster's own releases of `addons` (one task each, as installs). Refused
        naming `addons.N`: an add-on budcluster did not install (FOUND, BUILT_IN, MISSING), one
        still being installed, and Node Feature Discovery while budcluster's GPU Operator, which
        needs it, stays; refused (Conflict IN_USE) while jobs are active on the cluster for Kueue
        (it admits them) and the GPU Operator (it gives them their GPUs). One already being
        removed is left as it is."""
        await self.check(principal, addons, None)  # the scope, at least one, none twice
        now = self._clock.now()
        queued: list[AddonInstall] = []
        async with self._uow(TenantScope.system()) as uow:
            cluster, before = await _asked_of(uow, cluster_id)
            issues = _removal_issues(cluster, list(addons), before, now)
            if issues:
                raise ValidationFailed(issues)
            busy = [a for a in addons if a in (Addon.KUEUE, Addon.GPU_OPERATOR)]
            if busy and (active := await uow.jobs.active_on_cluster(cluster_id)):
                raise Conflict(
                    f"{len(active)} jobs are active on cluster {cluster.name}, and "
                    f"{CHARTS[busy[0]].title} {_NEEDED_BY_JOBS[busy[0]]}: cancel or drain them "
                    "first",
                    code="IN_USE",
                )
            for addon in addons:
                install = before[addon]
                if install.state is AddonState.REMOVING and not _abandoned(install, now):
                    continue  # on its way
                install.request_id = uuid.uuid4().hex
                install.requested_at, install.requested_by = now, _actor(principal)
                install.moved(AddonState.REMOVING, now, None)
                await uow.addons.put(install)
                queued.append(install)
            await uow.commit()
        await self._enqueue(cluster_id, queued)
        return cluster

    async def _enqueue(self, cluster_id: ClusterId, queued: list[AddonInstall]) -> None:
        """One task per request stored (an install, an upgrade or a removal), keyed by it."""
        for install in queued:
            await task_names.enqueue_after_commit(
                self._tasks,
                task_names.INSTALL_ADDON,
                key=f"addon:{cluster_id}:{install.addon.value}:{install.request_id}",
                cluster_id=str(cluster_id),
                addon=install.addon.value,
                request_id=install.request_id,
            )

    @staticmethod
    def _refusals(
        cluster: Cluster, asked: list[Addon], wanted: list[Addon], ours: set[Addon]
    ) -> list[FieldIssue]:
        """What can't be installed on this cluster's versions, by the field that asked for it
        (`addons.N`; `addons` for one asked for as another's need). A Kueue outside the range
        is budcluster's to upgrade when it installed it (`ours`)."""
        issues = []
        for addon in wanted:
            field = _field(asked, addon)
            theirs = addon is Addon.KUEUE and addon not in ours
            problem = kueue_problem(cluster.health) if theirs else None
            problem = problem or kubernetes_problem(CHARTS[addon], cluster.health)
            if problem:
                issues.append(FieldIssue(field, problem, UNSUPPORTED_VERSION))
        return issues

    async def installs(
        self, cluster_ids: Sequence[ClusterId]
    ) -> dict[ClusterId, list[AddonInstall]]:
        """The latest request of each add-on, per cluster (one read: the API's loader)."""
        async with self._uow(TenantScope.system()) as uow:
            return await uow.addons.of(cluster_ids)

    # --- the task -----------------------------------------------------------------------------

    async def install(
        self, cluster_id: ClusterId, addon: Addon, request_id: str, *, try_number: int = 1
    ) -> AddonState | None:
        """Install one requested add-on (module doc); returns the state it ended the try in
        (None: the request was replaced, or is done). Raises RetryTask to be run again."""
        async with self._uow(TenantScope.system()) as uow:
            cluster = await uow.clusters.get(cluster_id)
            install = await uow.addons.get(cluster_id, addon)
        if cluster is None or install is None or install.request_id != request_id:
            return None
        if install.state is AddonState.REMOVING:
            return await self._uninstall(cluster, install, try_number)
        if install.state not in PENDING:
            return None
        chart = CHARTS[addon]
        last = try_number >= INSTALL_TRIES
        if cluster.status is not ClusterStatus.AVAILABLE or cluster.health_checked_at is None:
            if last:
                reason = f"the cluster was not reached ({cluster.reason or cluster.status.value})"
                return await self._move(install, AddonState.FAILED, reason)
            raise RetryTask(CONNECTING_WAIT_SECONDS)
        check = next((h for h in cluster.health if h.name == chart.check), None)
        upgrade = install.upgrade_from is not None  # budcluster's own release: found, of course
        if check is not None and check.ok and not upgrade:
            install.origin = AddonOrigin.FOUND
            return await self._move(install, AddonState.INSTALLED, f"found: {check.detail}")
        theirs = addon is Addon.KUEUE and not upgrade
        problem = (kueue_problem(cluster.health) if theirs else None) or (
            kubernetes_problem(chart, cluster.health)
        )
        if problem:
            return await self._move(install, AddonState.FAILED, problem)
        if self._releases is None:
            return await self._move(install, AddonState.FAILED, "this service runs without Helm")
        await self._move(install, AddonState.INSTALLING, None)
        reference, repo = chart.reference(install.repository)
        release = ReleaseSpec(
            name=chart.release,
            namespace=chart.namespace,
            chart=reference,
            values=dict(chart.values),
            repo=repo,
            version=chart.version,
            create_namespace=True,
            upgrade=install.upgrade_from is not None,
        )
        try:
            await self._releases(cluster_id).install(release)
        except ReleaseRejected as exc:
            return await self._move(install, AddonState.FAILED, exc.message)
        except GatewayUnavailable as exc:
            if last:
                return await self._move(install, AddonState.FAILED, str(exc))
            await self._move(install, AddonState.INSTALLING, f"trying again: {exc}")
            raise RetryTask(self._backoff(try_number)) from None
        state = await self._move(install, AddonState.INSTALLED, None)
        if self._health_changed is not None:
            await self._health_changed(cluster_id)
        return state

    async def _uninstall(
        self, cluster: Cluster, install: AddonInstall, try_number: int
    ) -> AddonState | None:
        """Uninstall budcluster's release of the add-on (`remove` asked); MISSING once it is
        gone (the request forgotten, the cluster's health read again)."""
        last = try_number >= INSTALL_TRIES
        if self._releases is None:
            return await self._move(install, AddonState.FAILED, "this service runs without Helm")
        chart = CHARTS[install.addon]
        try:
            await self._releases(cluster.id).uninstall(chart.release, chart.namespace)
        except ReleaseRejected as exc:
            return await self._move(install, AddonState.FAILED, exc.message)
        except GatewayUnavailable as exc:
            if last:
                return await self._move(install, AddonState.FAILED, str(exc))
            raise RetryTask(self._backoff(try_number)) from None
        async with self._uow(TenantScope.system()) as uow:
            forgotten = await uow.addons.remove(cluster.id, install.addon, install.request_id)
            await uow.commit()
        if not forgotten:
            return None  # asked again meanwhile: that request goes on
        log.info("cluster %s: add-on %s removed", cluster.id, install.addon)
        if self._health_changed is not None:
            await self._health_changed(cluster.id)
        return AddonState.MISSING

    async def _move(
        self, install: AddonInstall, state: AddonState, reason: str | None
    ) -> AddonState | None:
        """Store the request's new state, unless another request replaced it meanwhile."""
        async with self._uow(TenantScope.system()) as uow:
            stored = await uow.addons.get(install.cluster_id, install.addon, for_update=True)
            if stored is None or stored.request_id != install.request_id:
                return None
            stored.origin = install.origin
            stored.moved(state, self._clock.now(), reason)
            await uow.addons.put(stored)
            await uow.commit()
        log.info("cluster %s: add-on %s %s", install.cluster_id, install.addon, state.value)
        return state


async def _asked_of(
    uow: UnitOfWork, cluster_id: ClusterId
) -> tuple[Cluster, dict[Addon, AddonInstall]]:
    """The cluster (NotFound while it is being deleted) and what was asked for on it."""
    cluster = await uow.clusters.get(cluster_id)
    if cluster is None or cluster.status is ClusterStatus.DELETING:
        raise NotFound("cluster", cluster_id)
    return cluster, {i.addon: i for i in (await uow.addons.of([cluster_id])).get(cluster_id, [])}


def _field(asked: list[Addon], addon: Addon) -> str:
    """The field that asked for `addon`: `addons.N`, or `addons` for one asked for as another's
    need."""
    return f"addons.{asked.index(addon)}" if addon in asked else "addons"


_NEEDED_BY_JOBS = {
    Addon.KUEUE: "admits them",
    Addon.GPU_OPERATOR: "gives them their GPUs",
}


def _removal_issues(
    cluster: Cluster, asked: list[Addon], before: dict[Addon, AddonInstall], now: datetime
) -> list[FieldIssue]:
    """Why an add-on asked to be removed can't be, by `addons.N`."""
    issues = []
    for index, addon in enumerate(asked):
        field, install, title = f"addons.{index}", before.get(addon), CHARTS[addon].title
        if not cluster.is_real:
            issues.append(FieldIssue(field, "built into the simulated cluster", "BUILT_IN"))
        elif install is None or install.origin is not AddonOrigin.HELM:
            issues.append(
                FieldIssue(
                    field,
                    f"budcluster did not install {title} here: it removes only its own releases",
                    "NOT_INSTALLED_BY_BUDCLUSTER",
                )
            )
        elif install.state in PENDING and not _abandoned(install, now):
            issues.append(
                FieldIssue(field, f"{title} is being installed: wait for it", "IN_PROGRESS")
            )
        elif addon is Addon.NODE_FEATURE_DISCOVERY:
            gpu = before.get(Addon.GPU_OPERATOR)
            stays = (
                gpu is not None
                and gpu.origin is AddonOrigin.HELM
                and gpu.state is not AddonState.REMOVING
                and Addon.GPU_OPERATOR not in asked
            )
            if stays:
                issues.append(
                    FieldIssue(
                        field,
                        "budcluster's GPU Operator needs it (its own copy is off): remove both",
                        "NEEDED",
                    )
                )
    return issues


def _abandoned(install: AddonInstall | None, now: datetime) -> bool:
    return install is not None and now - install.updated_at > ABANDONED_AFTER


def _actor(principal: Principal) -> str:
    if principal.token_id is not None:
        return f"token:{principal.token_id}"
    return f"tenant:{principal.tenant_id}"
