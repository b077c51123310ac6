"""Kueue quotas, capacity reservations, node labels, and jobs' queues, windows, dependencies and
stored estimates

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22 19:39:44.266403

Seeds the WorkloadPriorityClasses with Kueue's defaults; gives the nodes already stored the GPU
product and hostname labels their gateways report (so flavors select them before the next node
refresh); existing jobs join the "default" queue with no window, dependencies or estimates.
"""

from collections.abc import Sequence
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = '0002'
down_revision: str | None = '0001'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql')

PRIORITY_CLASSES = [
    ('CRITICAL', 1000, 'Never preempted; admitted before everything else.'),
    ('HIGH', 100, 'Production work that should start soon.'),
    ('NORMAL', 10, 'The default for jobs.'),
    ('LOW', 1, 'Background work; yields to every higher priority.'),
    ('SPOT', 0, 'Runs on spare capacity; the first to be preempted.'),
]


def upgrade() -> None:
    priority_classes = op.create_table('workload_priority_class',
    sa.Column('priority', sa.String(length=20), nullable=False),
    sa.Column('value', sa.Integer(), nullable=False),
    sa.Column('description', sa.Text(), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('priority', name=op.f('pk_workload_priority_class'))
    )
    now = datetime.now(UTC)
    op.bulk_insert(priority_classes, [
        {'priority': p, 'value': v, 'description': d, 'updated_at': now}
        for p, v, d in PRIORITY_CLASSES
    ])

    op.create_table('capacity_reservation',
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.Column('cluster_id', sa.Uuid(), nullable=False),
    sa.Column('tenant_id', sa.Uuid(), nullable=False),
    sa.Column('name', sa.String(length=63), nullable=False),
    sa.Column('cluster_queue', sa.String(length=63), nullable=False),
    sa.Column('flavor', sa.String(length=63), nullable=False),
    sa.Column('gpu_count', sa.Integer(), nullable=False),
    sa.Column('start', sa.DateTime(timezone=True), nullable=False),
    sa.Column('end', sa.DateTime(timezone=True), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('cancelled_at', sa.DateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['cluster_id'], ['cluster.id'], name=op.f('fk_capacity_reservation_cluster_id_cluster'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_capacity_reservation'))
    )
    with op.batch_alter_table('capacity_reservation', schema=None) as batch_op:
        batch_op.create_index('ix_capacity_reservation_cluster_id_end', ['cluster_id', 'end'], unique=False)

    op.create_table('cluster_queue',
    sa.Column('cluster_id', sa.Uuid(), nullable=False),
    sa.Column('name', sa.String(length=63), nullable=False),
    sa.Column('cohort', sa.String(length=63), nullable=True),
    sa.Column('queueing_strategy', sa.String(length=30), nullable=False),
    sa.Column('resource_groups', JSON, nullable=False),
    sa.Column('within_cluster_queue', sa.String(length=30), nullable=False),
    sa.Column('reclaim_within_cohort', sa.String(length=30), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['cluster_id'], ['cluster.id'], name=op.f('fk_cluster_queue_cluster_id_cluster'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('cluster_id', 'name', name=op.f('pk_cluster_queue'))
    )
    op.create_table('cohort',
    sa.Column('cluster_id', sa.Uuid(), nullable=False),
    sa.Column('name', sa.String(length=63), nullable=False),
    sa.Column('description', sa.Text(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['cluster_id'], ['cluster.id'], name=op.f('fk_cohort_cluster_id_cluster'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('cluster_id', 'name', name=op.f('pk_cohort'))
    )
    op.create_table('local_queue',
    sa.Column('cluster_id', sa.Uuid(), nullable=False),
    sa.Column('namespace', sa.String(length=63), nullable=False),
    sa.Column('name', sa.String(length=63), nullable=False),
    sa.Column('tenant_id', sa.Uuid(), nullable=False),
    sa.Column('cluster_queue', sa.String(length=63), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['cluster_id'], ['cluster.id'], name=op.f('fk_local_queue_cluster_id_cluster'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('cluster_id', 'namespace', 'name', name=op.f('pk_local_queue'))
    )
    op.create_table('resource_flavor',
    sa.Column('cluster_id', sa.Uuid(), nullable=False),
    sa.Column('name', sa.String(length=63), nullable=False),
    sa.Column('node_labels', JSON, nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['cluster_id'], ['cluster.id'], name=op.f('fk_resource_flavor_cluster_id_cluster'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('cluster_id', 'name', name=op.f('pk_resource_flavor'))
    )

    # New NOT NULL columns are filled through a server default, which is dropped again: the
    # code always writes them.
    with op.batch_alter_table('cluster_node_info', schema=None) as batch_op:
        batch_op.add_column(sa.Column('labels', JSON, nullable=False, server_default=sa.text("'{}'")))
    _label_stored_nodes()
    with op.batch_alter_table('cluster_node_info', schema=None) as batch_op:
        batch_op.alter_column('labels', server_default=None)

    with op.batch_alter_table('job', schema=None) as batch_op:
        batch_op.add_column(sa.Column('queue_name', sa.String(length=63), nullable=False, server_default='default'))
        batch_op.add_column(sa.Column('window', JSON, nullable=True))
        batch_op.add_column(sa.Column('depends_on', JSON, nullable=False, server_default=sa.text("'[]'")))
        batch_op.add_column(sa.Column('reservation_id', sa.Uuid(), nullable=True))
        batch_op.add_column(sa.Column('estimate_reason', sa.Text(), nullable=True))
        batch_op.add_column(sa.Column('estimate_warnings', JSON, nullable=False, server_default=sa.text("'[]'")))
        batch_op.add_column(sa.Column('submission_estimate', JSON, nullable=True))
        batch_op.add_column(sa.Column('admission_estimate', JSON, nullable=True))
        batch_op.create_foreign_key(batch_op.f('fk_job_reservation_id_capacity_reservation'), 'capacity_reservation', ['reservation_id'], ['id'])
    with op.batch_alter_table('job', schema=None) as batch_op:
        batch_op.alter_column('queue_name', server_default=None)
        batch_op.alter_column('depends_on', server_default=None)
        batch_op.alter_column('estimate_warnings', server_default=None)


def _label_stored_nodes() -> None:
    nodes = sa.table('cluster_node_info',
        sa.column('id', sa.Uuid()),
        sa.column('name', sa.String()),
        sa.column('gpu_type', sa.String()),
        sa.column('labels', JSON),
    )
    conn = op.get_bind()
    for node_id, name, gpu_type in conn.execute(sa.select(nodes.c.id, nodes.c.name, nodes.c.gpu_type)).all():
        labels = {'kubernetes.io/hostname': name}
        if gpu_type:
            labels['nvidia.com/gpu.product'] = gpu_type
        conn.execute(nodes.update().where(nodes.c.id == node_id).values(labels=labels))


def downgrade() -> None:
    with op.batch_alter_table('job', schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f('fk_job_reservation_id_capacity_reservation'), type_='foreignkey')
        batch_op.drop_column('admission_estimate')
        batch_op.drop_column('submission_estimate')
        batch_op.drop_column('estimate_warnings')
        batch_op.drop_column('estimate_reason')
        batch_op.drop_column('reservation_id')
        batch_op.drop_column('depends_on')
        batch_op.drop_column('window')
        batch_op.drop_column('queue_name')

    with op.batch_alter_table('cluster_node_info', schema=None) as batch_op:
        batch_op.drop_column('labels')

    op.drop_table('resource_flavor')
    op.drop_table('local_queue')
    op.drop_table('cohort')
    op.drop_table('cluster_queue')
    with op.batch_alter_table('capacity_reservation', schema=None) as batch_op:
        batch_op.drop_index('ix_capacity_reservation_cluster_id_end')

    op.drop_table('capacity_reservation')
    op.drop_table('workload_priority_class')
