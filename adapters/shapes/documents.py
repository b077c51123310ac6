"""Entities and their changes as plain JSON documents: what the outbox stores, Redis carries
and a subscriber in any process decodes (never pickled). Shapes derive from the dataclasses
(`adapters.shapes.entities` lists the exceptions); only the event envelope is written here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from adapters.shapes.entities import PLACEMENTS, SHAPES
from domain.model.benchmark import Benchmark, BenchmarkChanged
from domain.model.deployment import Deployment, DeploymentChanged
from domain.model.events import Change, ClusterChanged
from domain.model.job import Estimate, Job, JobChanged, Placement, PodSet
from domain.model.load import LoadPlan, RequestSample

_TYPES: dict[str, type[DeploymentChanged | BenchmarkChanged | ClusterChanged]] = {
    "cluster": ClusterChanged,
    "deployment": DeploymentChanged,
    "benchmark": BenchmarkChanged,
}
"""The `type` of a change's document (a job's change has none: the first kind there was)."""
_TYPE_OF: dict[type, str] = {cls: name for name, cls in _TYPES.items()}


def change_to_document(change: Change) -> dict[str, Any]:
    doc: dict[str, Any] = SHAPES.to_document(change)
    name = _TYPE_OF.get(type(change))
    return doc if name is None else {"type": name, **doc}


def change_from_document(doc: dict[str, Any]) -> Change:
    cls = _TYPES.get(doc.get("type") or "")
    if cls is None:
        return SHAPES.from_document(doc, JobChanged)  # type: ignore[no-any-return]
    return SHAPES.from_document(doc, cls)  # type: ignore[no-any-return]


job_to_document: Callable[[Job], dict[str, Any]] = SHAPES.encoder(Job)
job_from_document = SHAPES.decoder(Job)
deployment_to_document: Callable[[Deployment], dict[str, Any]] = SHAPES.encoder(Deployment)
deployment_from_document = SHAPES.decoder(Deployment)
benchmark_to_document: Callable[[Benchmark], dict[str, Any]] = SHAPES.encoder(Benchmark)
benchmark_from_document = SHAPES.decoder(Benchmark)
plan_to_document: Callable[[LoadPlan], dict[str, Any]] = SHAPES.encoder(LoadPlan)
plan_from_document = SHAPES.decoder(LoadPlan)
sample_to_document: Callable[[RequestSample], list[Any]] = SHAPES.encoder(RequestSample)
sample_from_document = SHAPES.decoder(RequestSample)
estimate_to_document: Callable[[Estimate | None], dict[str, Any] | None] = SHAPES.encoder(
    Estimate | None  # type: ignore[arg-type]
)
estimate_from_document: Callable[[Any], Estimate | None] = SHAPES.decoder(
    Estimate | None  # type: ignore[arg-type]
)


def placements_to_document(placements: tuple[Placement, ...]) -> Any:
    assert PLACEMENTS.encode is not None
    return PLACEMENTS.encode(placements)


def placements_from_document(doc: Any) -> tuple[Placement, ...]:
    assert PLACEMENTS.decode is not None
    return PLACEMENTS.decode(doc)  # type: ignore[no-any-return]


pod_sets_to_document: Callable[[tuple[PodSet, ...]], list[dict[str, Any]]] = SHAPES.encoder(
    tuple[PodSet, ...]
)
pod_sets_from_document: Callable[[Any], tuple[PodSet, ...]] = SHAPES.decoder(tuple[PodSet, ...])
