"""GraphQL enums are the domain's enums: one name per concept, in every layer.

`strawberry.enum` registers each domain enum in place, so the types annotate fields with the
domain classes themselves.
"""

from __future__ import annotations

import strawberry

from domain.model.budget import BudgetPeriod
from domain.model.cluster import ClusterStatus, NodeType, Platform
from domain.model.job import (
    BudgetAction,
    BudgetScope,
    ChangeKind,
    DeploymentType,
    JobPriority,
    JobStatus,
    JobType,
    SourceKind,
)
from domain.model.quota import (
    BorrowWithinCohortPolicy,
    FungibilityPolicy,
    FungibilityPreference,
    QueueingStrategy,
    ReclaimWithinCohort,
    WithinClusterQueue,
)
from domain.model.spend import SpendGroup
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
strawberry.enum(
    BorrowWithinCohortPolicy,
    description="Which workloads of other queues in the cohort a workload that must borrow may "
    "preempt: NEVER, or LOWER_PRIORITY ones.",
)
strawberry.enum(
    FungibilityPolicy,
    description="MAY_STOP_SEARCH: take the flavor being looked at; TRY_NEXT_FLAVOR: look at the "
    "queue's next flavor first (Kueue v1beta1 spells MAY_STOP_SEARCH Borrow or Preempt).",
)
strawberry.enum(
    FungibilityPreference,
    description="Kueue's flavorFungibility.preference: when every flavor a workload may take "
    "needs borrowing or preemption, BORROWING_OVER_PREEMPTION (Kueue's default) takes one where "
    "it borrows, PREEMPTION_OVER_BORROWING one where it preempts within the queue's nominal "
    "quota.",
)

strawberry.enum(
    BudgetAction,
    description="When a job's cost reaches its budget (its budgetLimit, or its project's or "
    "tenant's Budget this period): WARN says so (BUDGET events, the audit trail, a metric) and "
    "lets it run; PAUSE holds it PENDING at submission when it is expected to cost more, and "
    "once it has, takes it back from its cluster as a preemption does (not a failure, no retry "
    "used) and holds it until the budget allows (a raised limit, a new period); CANCEL refuses "
    "it at submission and cancels it once it has. Each is said at 80 % too.",
)
strawberry.enum(
    BudgetScope,
    description="Whose budget: a job's own (budgetLimit), its project's or its tenant's.",
)
strawberry.enum(BudgetPeriod, description="A budget's period: MONTH is a calendar month in UTC.")
strawberry.enum(
    SpendGroup,
    description="What spend is summed by: DAY is the UTC day the GPUs were used on (a run over "
    "midnight counts on both days).",
)

__all__ = [
    "BorrowWithinCohortPolicy",
    "BudgetAction",
    "BudgetPeriod",
    "BudgetScope",
    "ChangeKind",
    "ClusterStatus",
    "DeploymentType",
    "FungibilityPolicy",
    "FungibilityPreference",
    "JobPriority",
    "JobStatus",
    "JobType",
    "NodeType",
    "Platform",
    "QueueingStrategy",
    "ReclaimWithinCohort",
    "SegmentKind",
    "SourceKind",
    "SpendGroup",
    "WithinClusterQueue",
]
