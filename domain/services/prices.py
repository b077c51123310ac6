"""A cluster's prices over time, read in the unit of work at hand (`PriceBook`)."""

from __future__ import annotations

from collections.abc import Iterable

from domain.model.cluster import Cluster
from domain.model.ids import ClusterId
from domain.ports.unit_of_work import UnitOfWork
from domain.scheduling.cost import PriceBook


async def price_books(uow: UnitOfWork, clusters: Iterable[Cluster]) -> dict[ClusterId, PriceBook]:
    """Each cluster's price book: its settings' prices and the changes set on it (one read)."""
    found = list(clusters)
    changes = await uow.clusters.prices([c.id for c in found])
    return {c.id: PriceBook.of(c.settings, changes[c.id]) for c in found}
