"""Where a URL a caller gives leads: one of budcluster's deployments, or an outside address.

A URL whose host and port serve deployments (by its text, or by an address its name resolves
to) names a deployment: the one whose endpoint its path is at or below. It is the caller's only
when the caller's tenant owns that deployment (and, for a token limited to projects, its
project); any other answer, including a path that names no deployment there, is NotFound, as
for an unknown deployment id. A deployment of the caller's is reached as that deployment: not
through the address rules (the simulated clusters serve theirs on loopback). Every other URL goes
through the OutboundPolicy port, which resolves its host and refuses private, loopback,
link-local, metadata and reserved addresses unless the operator allows them
(domain.model.outbound). Deployments are matched across every tenant with one query, so that
one tenant's URL is recognised whoever gives it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from domain.errors import FieldIssue, NotFound, ValidationFailed
from domain.model.deployment import Deployment
from domain.model.ids import TenantId
from domain.model.outbound import (
    IPAddress,
    OutboundUrl,
    Verdict,
    canonical,
    parse_url,
)
from domain.model.principal import Principal
from domain.ports.outbound import OutboundPolicy
from domain.ports.unit_of_work import TenantScope, UnitOfWorkFactory
from domain.services.submission import JobSubmission

FORBIDDEN_ENDPOINT = "FORBIDDEN_ENDPOINT"
IN_CLUSTER_RULE = (
    "on a Kubernetes cluster a benchmark's endpoint must be a deployment's or a host the "
    "operator allows (its pod may reach nothing else)"
)


@dataclass(frozen=True)
class Destination:
    """A URL cleared for a caller: a deployment of theirs, or an outside host's verdict."""

    url: OutboundUrl
    deployment: Deployment | None = None
    verdict: Verdict | None = None

    @property
    def endpoint(self) -> str:
        """The URL to send to: a deployment's is written as the deployment's endpoint (and what
        the caller's path adds below it), whatever host name or address form named it."""
        own = _endpoint(self.deployment) if self.deployment is not None else None
        if own is None:
            return self.url.text.rstrip("/")
        return own.text.rstrip("/") + self.url.path[len(own.path) :]

    def egress(self) -> dict[str, Any]:
        """What a pod sending to it must be let reach: the deployment's pods, or the addresses
        the operator allowed, at the URL's port. Raises ValidationFailed (endpoint_url) for any
        other host."""
        if self.deployment is not None:
            return {"deployment_id": str(self.deployment.id)}
        if self.verdict is None or not self.verdict.operator_allowed:
            raise ValidationFailed.single("endpoint_url", IN_CLUSTER_RULE, FORBIDDEN_ENDPOINT)
        networks = [f"{a}/{a.max_prefixlen}" for a in map(canonical, self.verdict.addresses)]
        return {"networks": sorted(set(networks)), "port": self.url.port}


def _endpoint(deployment: Deployment) -> OutboundUrl | None:
    if not deployment.endpoint_url:
        return None
    try:
        return parse_url(deployment.endpoint_url)
    except ValueError:
        return None


def deployments_at(
    url: OutboundUrl, addresses: Iterable[IPAddress], deployments: Sequence[Deployment]
) -> list[tuple[Deployment, OutboundUrl]]:
    """The deployments served at the URL's host and port, or at an address it resolves to."""
    origins = {url.origin} | {(str(canonical(a)), url.port) for a in addresses}
    return [
        (d, endpoint)
        for d in deployments
        if (endpoint := _endpoint(d)) is not None and endpoint.origin in origins
    ]


def named_deployment(
    url: OutboundUrl, at: Sequence[tuple[Deployment, OutboundUrl]]
) -> Deployment | None:
    """Of the deployments at the URL's origin, the one whose endpoint the URL's path is at or
    below (the most specific)."""
    found = [(len(e.path), d) for d, e in at if url.below(e)]
    return max(found, key=lambda pair: pair[0])[1] if found else None


def own_deployment(
    endpoint: str, deployments: Sequence[Deployment], tenant_id: TenantId
) -> Deployment | None:
    """The deployment of `tenant_id`'s whose own endpoint `endpoint` is (by its text): a
    benchmark's run sends to it as to that deployment."""
    try:
        url = parse_url(endpoint)
    except ValueError:
        return None
    found = named_deployment(url, deployments_at(url, (), deployments))
    return found if found is not None and found.tenant_id == tenant_id else None


def fetched(sub: JobSubmission) -> dict[str, str]:
    """The URLs a SERVICE job makes budcluster's Helm fetch, by field: `spec.repo`, and
    `spec.chart` when it is a URL (not "repo/name" from the operator's own repositories)."""
    urls: dict[str, str] = {}
    if not isinstance(sub.spec, dict):
        return urls  # not a spec at all: its validation says so, naming `spec`
    for key in ("repo", "chart"):
        value = sub.spec.get(key)
        if isinstance(value, str) and (key == "repo" or "://" in value):
            urls[f"spec.{key}"] = value.strip()
    return urls


class Destinations:
    def __init__(self, *, uow: UnitOfWorkFactory, outbound: OutboundPolicy) -> None:
        self._uow = uow
        self._outbound = outbound

    async def endpoint(self, principal: Principal, text: str, field: str) -> Destination:
        """Where `text`, given as `field`, may lead for `principal` (see the module docstring).
        Raises ValidationFailed naming `field`, or NotFound."""
        try:
            url = parse_url(text)
        except ValueError as exc:
            raise ValidationFailed.single(field, str(exc), FORBIDDEN_ENDPOINT) from None
        async with self._uow(TenantScope.system()) as uow:
            deployments = await uow.deployments.with_endpoints()
        at = deployments_at(url, (), deployments)
        verdict = None
        if not at:
            verdict = await self._outbound.check(url)
            at = deployments_at(url, verdict.addresses, deployments)
        if at:
            found = named_deployment(url, at)
            if (
                found is None
                or found.tenant_id != principal.tenant_id
                or not principal.may_use_project(found.project_id)
            ):
                raise NotFound("deployment", text)
            return Destination(url, deployment=found)
        assert verdict is not None
        if verdict.problem is not None:
            raise ValidationFailed.single(field, verdict.problem, FORBIDDEN_ENDPOINT)
        return Destination(url, verdict=verdict)

    async def issues(
        self, urls: Mapping[str, str], *, schemes: tuple[str, ...] = ("http", "https", "oci")
    ) -> list[FieldIssue]:
        """What is wrong with each URL something of budcluster's will fetch (a Helm chart or
        its repository), by field: each must be an outside host the policy clears."""
        issues: list[FieldIssue] = []
        for field, text in urls.items():
            try:
                url = parse_url(text, schemes=schemes)
            except ValueError as exc:
                issues.append(FieldIssue(field, str(exc), FORBIDDEN_ENDPOINT))
                continue
            verdict = await self._outbound.check(url)
            if verdict.problem is not None:
                issues.append(FieldIssue(field, verdict.problem, FORBIDDEN_ENDPOINT))
        return issues
