"""Model deployments in SQL (`adapters.db.documents`: key columns and a JSON document)."""

from __future__ import annotations

import sqlalchemy as sa

from adapters.db.documents import DocumentRepository, keyset
from adapters.db.tables import deployments
from adapters.shapes.documents import (
    deployment_from_document,
    deployment_to_document,
)
from domain.model.deployment import Deployment
from domain.model.ids import ClusterId, DeploymentId, ProjectId
from domain.ports.repositories import JobCursor, Page


class SqlDeploymentRepository(DocumentRepository[Deployment]):
    table = deployments
    what = "deployment"
    to_document = staticmethod(deployment_to_document)
    from_document = staticmethod(deployment_from_document)

    async def add(self, deployment: Deployment) -> None:
        await self._add(deployment)

    async def get(
        self, deployment_id: DeploymentId, *, for_update: bool = False
    ) -> Deployment | None:
        return await self._get(deployment_id, for_update=for_update)

    async def on_cluster(self, cluster_id: ClusterId, *, limit: int) -> list[Deployment]:
        stmt = self._scoped(
            sa.select(deployments)
            .where(deployments.c.cluster_id == cluster_id)
            .order_by(deployments.c.created_at.desc(), deployments.c.id.desc())
            .limit(limit)
        )
        return [self._entity(r) for r in (await self._conn.execute(stmt)).mappings()]

    async def with_endpoints(self) -> list[Deployment]:
        # (one at zero replicas keeps its URL: a request brings it back, or scaleDeployment;
        # one stopped by its user has none)
        stmt = self._scoped(
            sa.select(deployments).where(
                deployments.c.document["endpoint_url"].as_string().is_not(None)
            )
        )
        found = [self._entity(r) for r in (await self._conn.execute(stmt)).mappings()]
        return [d for d in found if not d.stopped]

    async def autoscaled(self) -> list[Deployment]:
        # (a JSON null and a key not there both read as SQL NULL, on both databases)
        stmt = self._scoped(
            sa.select(deployments).where(
                deployments.c.document["autoscaling"].as_string().is_not(None)
            )
        ).order_by(deployments.c.created_at, deployments.c.id)
        found = [self._entity(r) for r in (await self._conn.execute(stmt)).mappings()]
        return [d for d in found if not d.stopped and d.autoscaling is not None]

    async def naming_secret(self, name: str) -> list[Deployment]:
        stmt = self._scoped(sa.select(deployments)).order_by(
            deployments.c.created_at, deployments.c.id
        )
        found = [self._entity(r) for r in (await self._conn.execute(stmt)).mappings()]
        return [d for d in found if not d.stopped and any(ref.name == name for ref in d.secrets)]

    async def page(
        self,
        *,
        cluster_ids: frozenset[ClusterId],
        project_ids: frozenset[ProjectId] | None,
        statuses: frozenset[str],
        first: int,
        after: JobCursor | None,
    ) -> Page[Deployment]:
        stmt = self._scoped(sa.select(deployments)).where(keyset(deployments, after))
        if cluster_ids:
            stmt = stmt.where(deployments.c.cluster_id.in_(list(cluster_ids)))
        if project_ids is not None:
            stmt = stmt.where(deployments.c.project_id.in_(list(project_ids)))
        if statuses:
            stmt = stmt.where(deployments.c.status.in_(sorted(statuses)))
        stmt = stmt.order_by(deployments.c.created_at.desc(), deployments.c.id.desc())
        rows = (await self._conn.execute(stmt.limit(first + 1))).mappings().all()
        found = [self._entity(r) for r in rows]
        return Page(found[:first], len(found) > first)
