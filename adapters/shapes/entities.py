"""Each entity's exceptions to the derived shapes: everything not listed here follows the rules
of `adapters.shapes.derive` (same name, same value, recursively)."""

from __future__ import annotations

from typing import Any

from adapters.shapes.derive import Field, Shape, Shapes, flat
from domain.model.benchmark import Benchmark, BenchmarkChanged
from domain.model.cluster import Cluster, Node
from domain.model.deployment import Deployment, DeploymentChanged
from domain.model.events import ClusterChanged
from domain.model.job import Job, JobChanged, Placement, Resources
from domain.model.load import RequestSample, Summary
from domain.model.quota import ClusterQueue, FlavorFungibility, PreemptionPolicy
from domain.model.secrets import Envelope
from domain.model.tenant_secret import TenantSecret
from domain.model.timeline import diff_from_document, diff_to_document

NOT_STORED = Field(stored=False)


def _placements_to_document(placements: tuple[Placement, ...]) -> Any:
    """None without placements, one object for one pod (the form stored before pod sets), a
    list of them for several."""
    docs = [SHAPES.to_document(p) for p in placements]
    if not docs:
        return None
    return docs[0] if len(docs) == 1 else docs


def _placements_from_document(doc: Any) -> tuple[Placement, ...]:
    if not doc:
        return ()
    docs = doc if isinstance(doc, list) else [doc]
    return tuple(SHAPES.from_document(d, Placement) for d in docs)


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


PLACEMENTS = Field(
    key="placement", encode=_placements_to_document, decode=_placements_from_document
)

SHAPES = Shapes(
    Shape(
        Job,
        # `attempt` keeps the key documents were written with
        document={
            "placements": PLACEMENTS,
            "changes": NOT_STORED,
            "attempt": Field(key="retry_count"),
        },
        row={
            "source": Field(columns={"kind": "source_kind", "source_id": "source_id"}),
            "resources": Field(columns=flat(Resources)),
            "placements": PLACEMENTS,
            "changes": NOT_STORED,
        },
    ),
    Shape(JobChanged, document={"recorded": NOT_STORED}),
    Shape(
        ClusterChanged,
        document={
            "timeline": Field(
                encode=lambda d: diff_to_document(d) if d else None,
                decode=lambda d: diff_from_document(d) if d else None,
            ),
            "state": NOT_STORED,  # stored with the event, never sent
        },
    ),
    Shape(Node, row={"node_type": Field(key="type"), "ready": Field(key="status")}),
    Shape(
        Cluster,
        row={
            "nodes": NOT_STORED,  # rows of their own
            "configuration": Field(
                encode=lambda e: e.to_json() if e else None,
                decode=lambda t: Envelope.from_json(t) if t else None,
            ),
        },
    ),
    Shape(
        ClusterQueue,
        row={
            "preemption": Field(columns=flat(PreemptionPolicy)),
            # the preference's column says whose preference it is
            "flavor_fungibility": Field(
                columns=flat(FlavorFungibility) | {"preference": "fungibility_preference"}
            ),
        },
    ),
    Shape(
        TenantSecret,
        row={
            "sealed": Field(encode=lambda e: e.to_json(), decode=Envelope.from_json),
        },
    ),
    Shape(Deployment, document={"changes": NOT_STORED}),
    Shape(DeploymentChanged, document={"recorded": NOT_STORED}),
    Shape(Benchmark, document={"changes": NOT_STORED}),
    Shape(BenchmarkChanged, document={"recorded": NOT_STORED}),
    Shape(Summary, positional=True),
    Shape(
        RequestSample,
        positional=True,  # a run keeps every request: compact, times to the microsecond
        document={
            "sent_at": Field(encode=_rounded),
            "ttft": Field(encode=_rounded),
            "e2el": Field(encode=_rounded),
            "itl": Field(encode=lambda itl: [round(gap, 6) for gap in itl]),
        },
    ),
)
