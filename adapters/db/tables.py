"""The relational schema. Alembic's history in migrations/ builds exactly this (`alembic check`).

Names follow the domain: a column is called what the entity attribute is called. Status and other
enumerations are stored as their string values. Time is always UTC.
"""

from __future__ import annotations

import sqlalchemy as sa

from adapters.db.types import JSONDocument, UTCDateTime

metadata = sa.MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

clusters = sa.Table(
    "cluster",
    metadata,
    sa.Column("id", sa.Uuid, primary_key=True),
    sa.Column("name", sa.String(63), nullable=False, unique=True),
    sa.Column("platform", sa.String(20), nullable=False, index=True),
    sa.Column("status", sa.String(20), nullable=False, index=True),
    sa.Column("reason", sa.Text),
    sa.Column("settings", JSONDocument, nullable=False),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Column("updated_at", UTCDateTime, nullable=False),
    sa.Column("configuration", sa.Text),  # the sealed kubeconfig (an envelope, JSON)
    sa.Column("context", sa.String(253)),
    sa.Column("server_url", sa.Text),
    sa.Column("ingress_url", sa.Text),
    sa.Column("enable_master_node", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("not_available_since", UTCDateTime),
    sa.Column("last_retry_time", UTCDateTime),
    sa.Column("retry_attempt", sa.Integer, nullable=False, server_default="0"),
    sa.Column("last_sync_at", UTCDateTime),
    sa.Column("health", JSONDocument),
    sa.Column("health_checked_at", UTCDateTime),
)

cluster_nodes = sa.Table(
    "cluster_node",
    metadata,
    sa.Column("id", sa.Uuid, primary_key=True),
    sa.Column(
        "cluster_id",
        sa.Uuid,
        sa.ForeignKey("cluster.id", ondelete="CASCADE"),
        nullable=False,
        index=True,
    ),
    sa.Column("name", sa.String(253), nullable=False),
    sa.Column("type", sa.String(10), nullable=False),
    sa.Column("gpu_type", sa.String(100)),
    sa.Column("gpu_count", sa.Integer, nullable=False),
    sa.Column("cpu_cores", sa.Float, nullable=False),
    sa.Column("memory_gb", sa.Float, nullable=False),
    sa.Column("status", sa.Boolean, nullable=False),
    sa.Column("schedulable", sa.Boolean, nullable=False),
    sa.Column("hardware_info", JSONDocument, nullable=False),
    sa.Column("labels", JSONDocument, nullable=False),
    sa.Column("status_sync_at", UTCDateTime, nullable=False),
    sa.Column("internal_ip", sa.String(64)),
    sa.Column("taints", JSONDocument),
    sa.Column("conditions", JSONDocument),
    sa.Column("allocatable", JSONDocument),
    sa.Column("capacity", JSONDocument),
    sa.Column("nfd_detected", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("detection_method", sa.String(20), nullable=False, server_default="allocatable"),
    sa.Column("excluded", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.UniqueConstraint("cluster_id", "name"),
)

jobs = sa.Table(
    "job",
    metadata,
    sa.Column("id", sa.Uuid, primary_key=True),
    sa.Column("name", sa.String(63), nullable=False),
    sa.Column("tenant_id", sa.Uuid, nullable=False),
    sa.Column("project_id", sa.Uuid, nullable=False),
    sa.Column("cluster_id", sa.Uuid, sa.ForeignKey("cluster.id"), nullable=False),
    sa.Column("source_kind", sa.String(20), nullable=False),
    sa.Column("source_id", sa.String(255)),
    sa.Column("job_type", sa.String(20), nullable=False),
    sa.Column("deployment_type", sa.String(20), nullable=False),
    sa.Column("spec", JSONDocument, nullable=False),
    sa.Column("gpu_type", sa.String(100)),
    sa.Column("gpu_count", sa.Integer, nullable=False),
    sa.Column("cpu_cores", sa.Float, nullable=False),
    sa.Column("memory_gb", sa.Float, nullable=False),
    sa.Column("storage_gb", sa.Integer),
    sa.Column("pod_count", sa.Integer, nullable=False, server_default="1"),
    sa.Column("pod_sets", JSONDocument, nullable=False, server_default=sa.text("'[]'")),
    sa.Column("estimated_duration_seconds", sa.Integer),
    sa.Column("max_duration_seconds", sa.Integer),
    sa.Column("termination_grace_seconds", sa.Integer),
    sa.Column("secrets", JSONDocument, nullable=False, server_default=sa.text("'[]'")),
    sa.Column("deadline", UTCDateTime),
    sa.Column("priority", sa.String(20), nullable=False),
    sa.Column("preemptible", sa.Boolean, nullable=False),
    sa.Column("status", sa.String(20), nullable=False),
    sa.Column("status_message", sa.Text),
    sa.Column("attempt", sa.Integer, nullable=False),
    sa.Column("max_retries", sa.Integer, nullable=False),
    sa.Column("estimated_start", UTCDateTime),
    sa.Column("estimated_end", UTCDateTime),
    sa.Column("actual_start", UTCDateTime),
    sa.Column("actual_end", UTCDateTime),
    sa.Column("estimated_cost", sa.Numeric(14, 4)),
    sa.Column("actual_cost", sa.Numeric(14, 4)),
    sa.Column("budget_limit", sa.Numeric(14, 4)),
    sa.Column("budget_action", sa.String(10), nullable=False, server_default="WARN"),
    sa.Column("budget_alerted", sa.Integer, nullable=False, server_default="0"),
    sa.Column("held_by", sa.String(10)),
    sa.Column("hold_reason", sa.Text),
    sa.Column("outputs", JSONDocument, nullable=False),
    sa.Column("idempotency_key", sa.String(128)),
    sa.Column("placement", JSONDocument),
    sa.Column("next_attempt_at", UTCDateTime),
    sa.Column("queue_name", sa.String(63), nullable=False),
    sa.Column("generation", sa.Integer, nullable=False, server_default="0"),
    sa.Column("window", JSONDocument),
    sa.Column("depends_on", JSONDocument, nullable=False),
    sa.Column("reservation_id", sa.Uuid, sa.ForeignKey("capacity_reservation.id")),
    sa.Column("estimate_reason", sa.Text),
    sa.Column("estimate_warnings", JSONDocument, nullable=False),
    sa.Column("submission_estimate", JSONDocument),
    sa.Column("admission_estimate", JSONDocument),
    sa.Column("fleet_id", sa.Uuid),
    sa.Column("moves", sa.Integer, nullable=False, server_default="0"),
    sa.Column("withdraw_from", sa.Uuid),
    sa.Column("dispatched_via", sa.Uuid),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Column("updated_at", UTCDateTime, nullable=False),
    sa.UniqueConstraint("tenant_id", "project_id", "idempotency_key"),
    sa.Index("ix_job_tenant_id_created_at_id", "tenant_id", "created_at", "id"),
    sa.Index("ix_job_created_at_id", "created_at", "id"),
    sa.Index("ix_job_cluster_id_status", "cluster_id", "status"),
    sa.Index("ix_job_status_next_attempt_at", "status", "next_attempt_at"),
)

gpu_prices = sa.Table(
    "gpu_price",
    metadata,
    sa.Column(
        "id",
        sa.BigInteger().with_variant(sa.Integer, "sqlite"),
        primary_key=True,
        autoincrement=True,
    ),
    sa.Column(
        "cluster_id", sa.Uuid, sa.ForeignKey("cluster.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column("gpu_type", sa.String(100), nullable=False),
    sa.Column("hourly", sa.Numeric(14, 4), nullable=False),
    sa.Column("since", UTCDateTime, nullable=False),
    sa.Index("ix_gpu_price_cluster_id_gpu_type_since", "cluster_id", "gpu_type", "since"),
)
"""A price change is a new row: the past keeps the price it had (`domain.scheduling.cost`)."""

fleets = sa.Table(
    "fleet",
    metadata,
    sa.Column("id", sa.Uuid, primary_key=True),
    sa.Column("name", sa.String(63), nullable=False, unique=True),
    sa.Column("members", JSONDocument, nullable=False),
    sa.Column("cluster_queue", sa.String(63), nullable=False),
    sa.Column("local_queue", sa.String(63), nullable=False),
    sa.Column("move_threshold_seconds", sa.Integer, nullable=False),
    sa.Column("max_moves", sa.Integer, nullable=False),
    sa.Column("manager_cluster_id", sa.Uuid),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Column("updated_at", UTCDateTime, nullable=False),
    sa.Column("plan", JSONDocument),
    sa.Column("planned_at", UTCDateTime),
)
"""Clusters grouped behind one queue name (`domain.model.fleet.Fleet`), with the latest plan
of where each of its waiting jobs would start (`domain.scheduling.dispatch.FleetPlan`)."""

drains = sa.Table(
    "drain",
    metadata,
    sa.Column("id", sa.Uuid, primary_key=True),
    sa.Column(
        "cluster_id", sa.Uuid, sa.ForeignKey("cluster.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column("node", sa.String(253)),
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("started_at", UTCDateTime, nullable=False),
    sa.Column("started_by", sa.Text, nullable=False),
    sa.Column("evictions_end", UTCDateTime, nullable=False),
    sa.Column("replacing", sa.Integer, nullable=False, server_default="0"),
    sa.Column("drained_at", UTCDateTime),
    sa.Column("ended_at", UTCDateTime),
    sa.Column("blocked", JSONDocument, nullable=False),
    sa.Index("ix_drain_cluster_id", "cluster_id"),
)
"""A node or a whole cluster (node NULL) taken out of service (`domain.model.drain.Drain`)."""

tenant_secrets = sa.Table(
    "tenant_secret",
    metadata,
    sa.Column("id", sa.Uuid, primary_key=True),
    sa.Column("tenant_id", sa.Uuid, nullable=False),
    sa.Column("name", sa.String(63), nullable=False),
    sa.Column("keys", JSONDocument, nullable=False),
    sa.Column("sealed", sa.Text, nullable=False),  # an envelope (JSON), bound to tenant and name
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Column("updated_at", UTCDateTime, nullable=False),
    sa.Column("created_by", sa.Text, nullable=False),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("last_used_at", UTCDateTime),
    sa.UniqueConstraint("tenant_id", "name"),
)
"""A tenant's named secret (`domain.model.tenant_secret.TenantSecret`): its values sealed."""

job_moves = sa.Table(
    "job_move",
    metadata,
    sa.Column(
        "id",
        sa.BigInteger().with_variant(sa.Integer, "sqlite"),
        primary_key=True,
        autoincrement=True,
    ),
    sa.Column(
        "job_id", sa.Uuid, sa.ForeignKey("job.id", ondelete="CASCADE"), nullable=False, index=True
    ),
    sa.Column("attempt", sa.Integer, nullable=False),
    sa.Column("from_cluster", sa.Uuid, nullable=False),
    sa.Column("to_cluster", sa.Uuid, nullable=False),
    sa.Column("at", UTCDateTime, nullable=False),
    sa.Column("reason", sa.Text, nullable=False),
)
"""Each move of a fleet job between members (`domain.model.fleet.JobMove`), written with it."""

job_log_tails = sa.Table(
    "job_log_tail",
    metadata,
    sa.Column("job_id", sa.Uuid, sa.ForeignKey("job.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("attempt", sa.Integer, primary_key=True),
    sa.Column("lines", JSONDocument, nullable=False),
    sa.Column("kept_at", UTCDateTime, nullable=False),
)
"""The last lines of a failed attempt's pods, kept when it failed (its pods go soon after)."""

budgets = sa.Table(
    "budget",
    metadata,
    sa.Column("key", sa.String(80), primary_key=True),
    sa.Column("tenant_id", sa.Uuid, nullable=False, index=True),
    sa.Column("project_id", sa.Uuid),
    sa.Column("limit", sa.Numeric(14, 4), nullable=False),
    sa.Column("action", sa.String(10), nullable=False),
    sa.Column("period", sa.String(10), nullable=False),
    sa.Column("alerted", sa.Integer, nullable=False, server_default="0"),
    sa.Column("alerted_period", sa.Date),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Column("updated_at", UTCDateTime, nullable=False),
)
"""A project's or tenant's budget per period (`domain.model.budget.Budget`), keyed by
`Budget.key` (the tenant, and the project or '-')."""

job_usage = sa.Table(
    "job_usage",
    metadata,
    sa.Column(
        "id",
        sa.BigInteger().with_variant(sa.Integer, "sqlite"),
        primary_key=True,
        autoincrement=True,
    ),
    sa.Column("job_id", sa.Uuid, nullable=False, index=True),
    sa.Column("attempt", sa.Integer, nullable=False),
    sa.Column("tenant_id", sa.Uuid, nullable=False),
    sa.Column("project_id", sa.Uuid, nullable=False),
    sa.Column("cluster_id", sa.Uuid, nullable=False),
    sa.Column("job_type", sa.String(20), nullable=False),
    sa.Column("gpu_type", sa.String(100)),
    sa.Column("gpus", sa.Integer, nullable=False),
    sa.Column("cpu_cores", sa.Float, nullable=False),
    sa.Column("started_at", UTCDateTime, nullable=False),
    sa.Column("ended_at", UTCDateTime, nullable=False),
    sa.Column("day", sa.Date, nullable=False),
    sa.Column("seconds", sa.Float, nullable=False),
    sa.Column("outcome", sa.String(20), nullable=False),
    sa.Column("cost", sa.Numeric(14, 4), nullable=False),
    sa.Index("ix_job_usage_tenant_id_day", "tenant_id", "day"),
    sa.Index("ix_job_usage_day", "day"),
)
"""One row per metered run and UTC day it ran on (`domain.model.job.Usage.by_day`), written in
the transaction that records the run's end. A ledger: no foreign key, so what was used outlives
a deleted job or cluster."""

job_events = sa.Table(
    "job_event",
    metadata,
    sa.Column(
        "id",
        sa.BigInteger().with_variant(sa.Integer, "sqlite"),
        primary_key=True,
        autoincrement=True,
    ),
    sa.Column(
        "job_id",
        sa.Uuid,
        sa.ForeignKey("job.id", ondelete="CASCADE"),
        nullable=False,
        index=True,
    ),
    sa.Column("attempt", sa.Integer, nullable=False),
    sa.Column("from_status", sa.String(20)),
    sa.Column("to_status", sa.String(20), nullable=False),
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("at", UTCDateTime, nullable=False),
)

event_sequences = sa.Table(
    "cluster_event_sequence",
    metadata,
    sa.Column(
        "cluster_id", sa.Uuid, sa.ForeignKey("cluster.id", ondelete="CASCADE"), primary_key=True
    ),
    sa.Column("last_sequence", sa.BigInteger, nullable=False),
    sa.Column("retained_after", sa.BigInteger, nullable=False),
)

outbox = sa.Table(
    "outbox_event",
    metadata,
    sa.Column(
        "cluster_id", sa.Uuid, sa.ForeignKey("cluster.id", ondelete="CASCADE"), primary_key=True
    ),
    sa.Column("sequence", sa.BigInteger, primary_key=True),
    sa.Column("kind", sa.String(30), nullable=False),
    sa.Column("tenant_id", sa.Uuid),
    sa.Column("job_id", sa.Uuid),
    sa.Column("payload", JSONDocument, nullable=False),
    sa.Column("occurred_at", UTCDateTime, nullable=False),
)

cluster_timelines = sa.Table(
    "cluster_timeline",
    metadata,
    sa.Column(
        "cluster_id", sa.Uuid, sa.ForeignKey("cluster.id", ondelete="CASCADE"), primary_key=True
    ),
    sa.Column("sequence", sa.BigInteger, nullable=False),
    sa.Column("computed_at", UTCDateTime, nullable=False),
    sa.Column("document", JSONDocument, nullable=False),
)

api_tokens = sa.Table(
    "api_token",
    metadata,
    sa.Column("id", sa.Uuid, primary_key=True),
    sa.Column("tenant_id", sa.Uuid, nullable=False, index=True),
    sa.Column("name", sa.String(100), nullable=False),
    sa.Column("secret_hash", sa.String(128), nullable=False),
    sa.Column("scopes", JSONDocument, nullable=False),
    sa.Column("project_ids", JSONDocument),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Column("revoked_at", UTCDateTime),
    sa.Column("expires_at", UTCDateTime),
)

# --- Kueue's objects, per cluster (their names are unique within a cluster, as in Kueue) -------


def _cluster_fk() -> sa.Column[object]:
    return sa.Column(
        "cluster_id", sa.Uuid, sa.ForeignKey("cluster.id", ondelete="CASCADE"), primary_key=True
    )


NEVER_BORROW = sa.text("""'{"policy": "Never"}'""")
"""Kueue's default borrowWithinCohort. The Kueue settings' columns keep server defaults (Kueue's),
so a release from before them can still write rows during a rolling upgrade."""

resource_flavors = sa.Table(
    "resource_flavor",
    metadata,
    _cluster_fk(),
    sa.Column("name", sa.String(63), primary_key=True),
    sa.Column("node_labels", JSONDocument, nullable=False),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Column("updated_at", UTCDateTime, nullable=False),
)

cluster_queues = sa.Table(
    "cluster_queue",
    metadata,
    _cluster_fk(),
    sa.Column("name", sa.String(63), primary_key=True),
    sa.Column("cohort", sa.String(63)),
    sa.Column("queueing_strategy", sa.String(30), nullable=False),
    sa.Column("resource_groups", JSONDocument, nullable=False),
    sa.Column("within_cluster_queue", sa.String(30), nullable=False),
    sa.Column("reclaim_within_cohort", sa.String(30), nullable=False),
    sa.Column("borrow_within_cohort", JSONDocument, nullable=False, server_default=NEVER_BORROW),
    sa.Column("when_can_borrow", sa.String(30), nullable=False, server_default="MayStopSearch"),
    sa.Column("when_can_preempt", sa.String(30), nullable=False, server_default="TryNextFlavor"),
    sa.Column("fungibility_preference", sa.String(30)),
    sa.Column("fair_sharing_weight", sa.Float, nullable=False, server_default="1"),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Column("updated_at", UTCDateTime, nullable=False),
)

local_queues = sa.Table(
    "local_queue",
    metadata,
    _cluster_fk(),
    sa.Column("namespace", sa.String(63), primary_key=True),
    sa.Column("name", sa.String(63), primary_key=True),
    sa.Column("tenant_id", sa.Uuid, nullable=False),
    sa.Column("cluster_queue", sa.String(63), nullable=False),
    sa.Column("created_at", UTCDateTime, nullable=False),
)

cohorts = sa.Table(
    "cohort",
    metadata,
    _cluster_fk(),
    sa.Column("name", sa.String(63), primary_key=True),
    sa.Column("description", sa.Text),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Column("parent", sa.String(63)),
    sa.Column("resource_groups", JSONDocument, nullable=False, server_default=sa.text("'[]'")),
    sa.Column("fair_sharing_weight", sa.Float, nullable=False, server_default="1"),
)

quota_settings = sa.Table(
    "quota_settings",
    metadata,
    _cluster_fk(),
    sa.Column("fair_sharing", sa.Boolean, nullable=False, server_default=sa.false()),
)
"""At most one row per cluster; a cluster without one has Kueue's defaults."""

workload_priority_classes = sa.Table(
    "workload_priority_class",
    metadata,
    sa.Column("priority", sa.String(20), primary_key=True),
    sa.Column("value", sa.Integer, nullable=False),
    sa.Column("description", sa.Text, nullable=False),
    sa.Column("updated_at", UTCDateTime, nullable=False),
)
"""Global, one row per JobPriority; the migration seeds Kueue's defaults."""

capacity_reservations = sa.Table(
    "capacity_reservation",
    metadata,
    sa.Column("id", sa.Uuid, primary_key=True),
    sa.Column(
        "cluster_id", sa.Uuid, sa.ForeignKey("cluster.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column("tenant_id", sa.Uuid, nullable=False),
    sa.Column("name", sa.String(63), nullable=False),
    sa.Column("cluster_queue", sa.String(63), nullable=False),
    sa.Column("flavor", sa.String(63), nullable=False),
    sa.Column("gpu_count", sa.Integer, nullable=False),
    sa.Column("start", UTCDateTime, nullable=False),
    sa.Column("end", UTCDateTime, nullable=False),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Column("cancelled_at", UTCDateTime),
    sa.Index("ix_capacity_reservation_cluster_id_end", "cluster_id", "end"),
)

deployments = sa.Table(
    "deployment",
    metadata,
    sa.Column("id", sa.Uuid, primary_key=True),
    sa.Column("tenant_id", sa.Uuid, nullable=False),
    sa.Column("project_id", sa.Uuid, nullable=False),
    sa.Column(
        "cluster_id", sa.Uuid, sa.ForeignKey("cluster.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column("name", sa.String(63), nullable=False),
    sa.Column("status", sa.String(20), nullable=False),
    sa.Column("document", JSONDocument, nullable=False),  # the rest (adapters.shapes.documents)
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Column("updated_at", UTCDateTime, nullable=False),
    sa.Index("ix_deployment_tenant_id_created_at_id", "tenant_id", "created_at", "id"),
    sa.Index("ix_deployment_cluster_id_created_at", "cluster_id", "created_at"),
)

benchmarks = sa.Table(
    "benchmark",
    metadata,
    sa.Column("id", sa.Uuid, primary_key=True),
    sa.Column("tenant_id", sa.Uuid, nullable=False),
    sa.Column("project_id", sa.Uuid, nullable=False),
    sa.Column(
        "cluster_id", sa.Uuid, sa.ForeignKey("cluster.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column("deployment_id", sa.Uuid, index=True),
    sa.Column("job_id", sa.Uuid, nullable=False, index=True),
    sa.Column("name", sa.String(63), nullable=False),
    sa.Column("status", sa.String(20), nullable=False, index=True),
    sa.Column("document", JSONDocument, nullable=False),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Column("updated_at", UTCDateTime, nullable=False),
    sa.Index("ix_benchmark_tenant_id_created_at_id", "tenant_id", "created_at", "id"),
)

benchmark_samples = sa.Table(
    "benchmark_sample_set",
    metadata,
    sa.Column(
        "benchmark_id",
        sa.Uuid,
        sa.ForeignKey("benchmark.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    sa.Column("count", sa.Integer, nullable=False),
    sa.Column("samples", JSONDocument, nullable=False),  # one compact list per request
)

# --- the audit trail ------------------------------------------------------------------------

audit_events = sa.Table(
    "audit_event",
    metadata,
    sa.Column("id", sa.Uuid, primary_key=True),
    sa.Column("at", UTCDateTime, nullable=False),
    sa.Column("tenant_id", sa.Uuid),
    sa.Column("project_id", sa.Uuid),
    sa.Column("actor", sa.String(120), nullable=False),
    sa.Column("token_id", sa.Uuid),
    sa.Column("operation", sa.String(100), nullable=False),
    sa.Column("targets", JSONDocument, nullable=False),
    sa.Column("input", JSONDocument, nullable=False),
    sa.Column("outcome", sa.String(60), nullable=False),
    sa.Column("source", sa.String(20), nullable=False),
    sa.Index(None, "tenant_id", "at", "id"),
    sa.Index(None, "at", "id"),
)

audit_event_targets = sa.Table(
    "audit_event_target",
    metadata,
    sa.Column("event_id", sa.Uuid, primary_key=True),
    sa.Column("target", sa.String(255), primary_key=True),
    sa.Column("at", UTCDateTime, nullable=False),
    sa.Index(None, "target", "at", "event_id"),
)
"""Each event's targets, one row each: `auditEvents(filter: {target})` is an indexed lookup
(the event's own `targets` column is what is read back)."""

cluster_addons = sa.Table(
    "cluster_addon",
    metadata,
    sa.Column(
        "cluster_id", sa.Uuid, sa.ForeignKey("cluster.id", ondelete="CASCADE"), primary_key=True
    ),
    sa.Column("addon", sa.String(40), primary_key=True),
    sa.Column("state", sa.String(20), nullable=False),
    sa.Column("request_id", sa.String(64), nullable=False),
    sa.Column("requested_at", UTCDateTime, nullable=False),
    sa.Column("requested_by", sa.Text, nullable=False),
    sa.Column("updated_at", UTCDateTime, nullable=False),
    sa.Column("chart_version", sa.String(40), nullable=False),
    sa.Column("repository", sa.Text, nullable=False),
    sa.Column("origin", sa.String(20)),
    sa.Column("reason", sa.Text),
    sa.Column("upgrade_from", sa.String(40)),
)
"""The operator's latest request for each add-on of a cluster, and how it went
(`domain.model.addons.AddonInstall`)."""

# --- leases ----------------------------------------------------------------------------------

leases = sa.Table(
    "lease",
    metadata,
    sa.Column("name", sa.String(200), primary_key=True),
    sa.Column("holder", sa.String(200), nullable=False),
    sa.Column("expires_at", UTCDateTime, nullable=False),
)
"""Which process watches which cluster, on PostgreSQL: a cluster's progress never waits on
Redis (before, the lease lived there, and a 60 s Redis outage stopped the demo cluster's loop)."""
