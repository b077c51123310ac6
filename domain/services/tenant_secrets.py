"""A tenant's named secrets: stored sealed (`setSecret`), listed without their values, removed;
and opened for an attempt's hand-over, audited each time (`open_for`).

Who may: a tenant's token with `secrets:write` sets and removes its tenant's secrets (a token
limited to projects too: secrets are the tenant's, as its namespace is); `jobs:read` lists their
names and keys. The operator (`admin`) names the tenant. Nobody reads a value back: it leaves
budcluster only to the cluster that runs a job naming it.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime

from domain.errors import Conflict, Forbidden, NotFound, SecretUnreadable, ValidationFailed
from domain.model.audit import AuditEvent, concerning
from domain.model.ids import TenantId
from domain.model.job import Job
from domain.model.principal import Principal, Scope
from domain.model.tenant_secret import (
    MAX_SECRETS_PER_TENANT,
    MountedSecret,
    TenantSecret,
    data_issues,
    from_plaintext,
    new_tenant_secret_id,
    plaintext,
    secret_name_issues,
    secret_owner,
)
from domain.ports.clock import Clock
from domain.ports.secrets import SecretBox
from domain.ports.unit_of_work import TenantScope, UnitOfWork, UnitOfWorkFactory
from domain.services.drains import actor_of

SYSTEM_ACTOR = "system:hand-over"
USED = "secretUsed"
"""The audit trail's operation for a secret opened for an attempt's hand-over."""


class SecretGone(Exception):
    """A secret a job names is no longer there (removed after it was submitted), or can't be
    opened: the attempt can't be handed over."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class SecretService:
    def __init__(self, *, uow: UnitOfWorkFactory, box: SecretBox, clock: Clock) -> None:
        self._uow = uow
        self._box = box
        self._clock = clock

    def _tenant(self, principal: Principal, tenant_id: TenantId | None, *, write: bool) -> TenantId:
        if write and not principal.has(Scope.SECRETS_WRITE):
            raise Forbidden("storing or removing secrets needs the secrets:write scope")
        if not write and not principal.has(Scope.JOBS_READ):
            raise Forbidden("reading secrets' names needs the jobs:read scope")
        if tenant_id is None or tenant_id == principal.tenant_id:
            return principal.tenant_id
        if not principal.sees_every_tenant:
            raise NotFound("tenant", tenant_id)
        return tenant_id

    async def secrets(
        self, principal: Principal, tenant_id: TenantId | None = None
    ) -> list[TenantSecret]:
        tenant = self._tenant(principal, tenant_id, write=False)
        async with self._uow(TenantScope(tenant)) as uow:
            return await uow.secrets.of_tenant(tenant)

    async def put(
        self,
        principal: Principal,
        tenant_id: TenantId | None,
        name: str,
        entries: Sequence[tuple[str, str]],
    ) -> TenantSecret:
        """Store the secret, or replace all its values (its version goes up; attempts handed
        over before keep what they were given)."""
        tenant = self._tenant(principal, tenant_id, write=True)
        issues = secret_name_issues(name) + data_issues(entries)
        if issues:
            raise ValidationFailed(issues)
        concerning(tenant, None)
        data = dict(entries)
        keys = tuple(sorted(data))
        sealed = self._box.seal(plaintext(data), owner=secret_owner(tenant, name))
        now = self._clock.now()
        async with self._uow(TenantScope(tenant)) as uow:
            found = (await uow.secrets.named(tenant, [name], for_update=True)).get(name)
            if found is not None:
                stored = found.replaced(keys, sealed, now)
            else:
                if await uow.secrets.count(tenant) >= MAX_SECRETS_PER_TENANT:
                    raise Conflict(
                        f"a tenant keeps at most {MAX_SECRETS_PER_TENANT} secrets: remove one "
                        "first",
                        code="TOO_MANY",
                    )
                stored = TenantSecret(
                    new_tenant_secret_id(),
                    tenant,
                    name,
                    keys,
                    sealed,
                    now,
                    now,
                    actor_of(principal),
                )
            await uow.secrets.put(stored)
            await uow.commit()
        return stored

    async def remove(
        self, principal: Principal, tenant_id: TenantId | None, name: str, *, force: bool = False
    ) -> TenantSecret:
        """Remove the secret. Refused (Conflict IN_USE, naming them) while jobs not ended or
        deployments not stopped name it, since each would fail at its next hand-over (a retry,
        a requeue, a replica started); with `force` removed anyway. Attempts handed over keep
        their copy on their cluster until they end; a job naming it that is handed over later
        fails, saying so."""
        tenant = self._tenant(principal, tenant_id, write=True)
        if issues := secret_name_issues(name):
            raise ValidationFailed(issues)
        concerning(tenant, None)
        async with self._uow(TenantScope(tenant)) as uow:
            found = (await uow.secrets.named(tenant, [name], for_update=True)).get(name)
            if found is None:
                raise NotFound("secret", name)
            if not force:
                jobs = await uow.jobs.naming_secret(tenant, name)
                deployments = await uow.deployments.naming_secret(name)
                if jobs or deployments:
                    raise _in_use(name, [str(j.id) for j in jobs], [d.name for d in deployments])
            await uow.secrets.remove(tenant, name)
            await uow.commit()
        return found

    async def open_for(self, uow: UnitOfWork, job: Job, cluster: str) -> tuple[MountedSecret, ...]:
        """The job's secrets opened for the hand-over of its attempt to `cluster`, noted as used
        and audited in `uow` (the caller commits). Raises SecretGone."""
        if not job.secrets:
            return ()
        names = [r.name for r in job.secrets]
        found = await uow.secrets.named(job.tenant_id, names)
        if missing := [n for n in names if n not in found]:
            raise SecretGone(f"its secret {missing[0]} was removed after it was submitted")
        mounted = []
        for ref in job.secrets:
            secret = found[ref.name]
            try:
                raw = self._box.open(secret.sealed, owner=secret_owner(job.tenant_id, ref.name))
                data = from_plaintext(raw)
            except (SecretUnreadable, ValueError):
                raise SecretGone(f"its secret {ref.name} could not be opened") from None
            mounted.append(MountedSecret(ref, data))
        now = self._clock.now()
        await uow.secrets.used([s.id for s in found.values()], now)
        await uow.audit.add(_used(job, [found[n] for n in names], cluster, now))
        return tuple(mounted)


IN_USE_NAMED = 3
"""How many of the jobs and deployments naming a secret its refusal names (the count says the
rest): enough to find them, short enough to read."""


def _in_use(name: str, jobs: list[str], deployments: list[str]) -> Conflict:
    named = []
    for what, ids in (("job", jobs), ("deployment", deployments)):
        if ids:
            shown = ", ".join(ids[:IN_USE_NAMED]) + (" and more" if len(ids) > IN_USE_NAMED else "")
            named.append(f"{len(ids)} {what}{'s' if len(ids) > 1 else ''} ({shown})")
    return Conflict(
        f"secret {name} is named by {' and '.join(named)} that would fail at their next "
        "hand-over without it; stop or cancel them first, or remove it with force: true",
        code="IN_USE",
    )


def _used(job: Job, secrets: list[TenantSecret], cluster: str, now: datetime) -> AuditEvent:
    return AuditEvent(
        id=uuid.uuid4(),
        at=now,
        tenant_id=job.tenant_id,
        actor=SYSTEM_ACTOR,
        token_id=None,
        operation=USED,
        targets=(str(job.id), *(str(s.id) for s in secrets)),
        input={
            "job": str(job.id),
            "attempt": job.attempt,
            "cluster": cluster,
            "names": [s.name for s in secrets],
            "versions": [s.version for s in secrets],
        },
        outcome="OK",
        source="system",
        project_id=job.project_id,
    )
