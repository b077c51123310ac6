"""GraphQL enums are the domain's enums: one name per concept, in every layer.

`strawberry.enum` registers each domain enum in place, so the types annotate fields with the
domain classes themselves.
"""

from __future__ import annotations

import strawberry

from domain.model.cluster import ClusterStatus, NodeType, Platform
from domain.model.job import ChangeKind, DeploymentType, JobPriority, JobStatus, JobType, SourceKind
from domain.model.quota import QueueingStrategy, ReclaimWithinCohort, WithinClusterQueue
from domain.model.timeline import SegmentKind

strawberry.enum(JobStatus, description="Where a job is in its lifecycle.")
strawberry.enum(
    JobType, description="SERVICE runs until stopped; BATCH and TRAINING run to completion."
)
strawberry.enum(DeploymentType)
strawberry.enum(
    JobPriority,
    description="Admission order and preemption: CRITICAL is never preempted, SPOT is first to go.",
)
strawberry.enum(SourceKind, description="What created the job.")
strawberry.enum(ClusterStatus)
strawberry.enum(Platform)
strawberry.enum(NodeType)
strawberry.enum(ChangeKind, name="JobChangeKind")
strawberry.enum(
    SegmentKind,
    description="COMPLETED ran; RUNNING runs now; ESTIMATED is expected; "
    "RESERVED is booked capacity.",
)
strawberry.enum(
    QueueingStrategy,
    description="STRICT_FIFO: a head that does not fit blocks the queue; BEST_EFFORT_FIFO: "
    "later workloads that fit may go first.",
)
strawberry.enum(
    WithinClusterQueue,
    description="Which workloads of its own queue a pending workload may preempt.",
)
strawberry.enum(
    ReclaimWithinCohort,
    description="Which workloads of other queues in the cohort a queue may preempt to take back "
    "quota they borrowed from it.",
)

__all__ = [
    "ChangeKind",
    "ClusterStatus",
    "DeploymentType",
    "JobPriority",
    "JobStatus",
    "JobType",
    "NodeType",
    "Platform",
    "QueueingStrategy",
    "ReclaimWithinCohort",
    "SegmentKind",
    "SourceKind",
    "WithinClusterQueue",
]
