"""initial schema

Revision ID: 0001
Revises: 
Create Date: 2026-11-22 19:05:25.015219
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = '0001'
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('api_token',
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.Column('tenant_id', sa.Uuid(), nullable=False),
    sa.Column('name', sa.String(length=100), nullable=False),
    sa.Column('secret_hash', sa.String(length=128), nullable=False),
    sa.Column('scopes', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('project_ids', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('revoked_at', sa.DateTime(timezone=True), nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_api_token'))
    )
    with op.batch_alter_table('api_token', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_api_token_tenant_id'), ['tenant_id'], unique=False)

    op.create_table('cluster',
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.Column('name', sa.String(length=63), nullable=False),
    sa.Column('platform', sa.String(length=20), nullable=False),
    sa.Column('status', sa.String(length=20), nullable=False),
    sa.Column('reason', sa.Text(), nullable=True),
    sa.Column('settings', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_cluster')),
    sa.UniqueConstraint('name', name=op.f('uq_cluster_name'))
    )
    with op.batch_alter_table('cluster', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_cluster_platform'), ['platform'], unique=False)
        batch_op.create_index(batch_op.f('ix_cluster_status'), ['status'], unique=False)

    op.create_table('cluster_event_sequence',
    sa.Column('cluster_id', sa.Uuid(), nullable=False),
    sa.Column('last_sequence', sa.BigInteger(), nullable=False),
    sa.Column('retained_after', sa.BigInteger(), nullable=False),
    sa.ForeignKeyConstraint(['cluster_id'], ['cluster.id'], name=op.f('fk_cluster_event_sequence_cluster_id_cluster'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('cluster_id', name=op.f('pk_cluster_event_sequence'))
    )
    op.create_table('cluster_node_info',
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.Column('cluster_id', sa.Uuid(), nullable=False),
    sa.Column('name', sa.String(length=253), nullable=False),
    sa.Column('type', sa.String(length=10), nullable=False),
    sa.Column('gpu_type', sa.String(length=100), nullable=True),
    sa.Column('gpu_count', sa.Integer(), nullable=False),
    sa.Column('cpu_cores', sa.Float(), nullable=False),
    sa.Column('memory_gb', sa.Float(), nullable=False),
    sa.Column('status', sa.Boolean(), nullable=False),
    sa.Column('schedulable', sa.Boolean(), nullable=False),
    sa.Column('hardware_info', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('status_sync_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['cluster_id'], ['cluster.id'], name=op.f('fk_cluster_node_info_cluster_id_cluster'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_cluster_node_info')),
    sa.UniqueConstraint('cluster_id', 'name', name=op.f('uq_cluster_node_info_cluster_id_name'))
    )
    with op.batch_alter_table('cluster_node_info', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_cluster_node_info_cluster_id'), ['cluster_id'], unique=False)

    op.create_table('job',
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.Column('name', sa.String(length=63), nullable=False),
    sa.Column('tenant_id', sa.Uuid(), nullable=False),
    sa.Column('project_id', sa.Uuid(), nullable=False),
    sa.Column('cluster_id', sa.Uuid(), nullable=False),
    sa.Column('source_kind', sa.String(length=20), nullable=False),
    sa.Column('source_id', sa.String(length=255), nullable=True),
    sa.Column('job_type', sa.String(length=20), nullable=False),
    sa.Column('deployment_type', sa.String(length=20), nullable=False),
    sa.Column('spec', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('gpu_type', sa.String(length=100), nullable=True),
    sa.Column('gpu_count', sa.Integer(), nullable=False),
    sa.Column('cpu_cores', sa.Float(), nullable=False),
    sa.Column('memory_gb', sa.Float(), nullable=False),
    sa.Column('storage_gb', sa.Integer(), nullable=True),
    sa.Column('estimated_duration_seconds', sa.Integer(), nullable=True),
    sa.Column('max_duration_seconds', sa.Integer(), nullable=True),
    sa.Column('deadline', sa.DateTime(timezone=True), nullable=True),
    sa.Column('priority', sa.String(length=20), nullable=False),
    sa.Column('preemptible', sa.Boolean(), nullable=False),
    sa.Column('status', sa.String(length=20), nullable=False),
    sa.Column('status_message', sa.Text(), nullable=True),
    sa.Column('retry_count', sa.Integer(), nullable=False),
    sa.Column('max_retries', sa.Integer(), nullable=False),
    sa.Column('estimated_start', sa.DateTime(timezone=True), nullable=True),
    sa.Column('estimated_end', sa.DateTime(timezone=True), nullable=True),
    sa.Column('actual_start', sa.DateTime(timezone=True), nullable=True),
    sa.Column('actual_end', sa.DateTime(timezone=True), nullable=True),
    sa.Column('estimated_cost', sa.Numeric(precision=14, scale=4), nullable=True),
    sa.Column('actual_cost', sa.Numeric(precision=14, scale=4), nullable=True),
    sa.Column('budget_limit', sa.Numeric(precision=14, scale=4), nullable=True),
    sa.Column('outputs', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('idempotency_key', sa.String(length=128), nullable=True),
    sa.Column('placement', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.Column('next_attempt_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('version', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['cluster_id'], ['cluster.id'], name=op.f('fk_job_cluster_id_cluster')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_job')),
    sa.UniqueConstraint('tenant_id', 'idempotency_key', name=op.f('uq_job_tenant_id_idempotency_key'))
    )
    with op.batch_alter_table('job', schema=None) as batch_op:
        batch_op.create_index('ix_job_cluster_id_status', ['cluster_id', 'status'], unique=False)
        batch_op.create_index('ix_job_status_next_attempt_at', ['status', 'next_attempt_at'], unique=False)
        batch_op.create_index('ix_job_tenant_id_created_at_id', ['tenant_id', 'created_at', 'id'], unique=False)

    op.create_table('outbox_event',
    sa.Column('cluster_id', sa.Uuid(), nullable=False),
    sa.Column('sequence', sa.BigInteger(), nullable=False),
    sa.Column('kind', sa.String(length=30), nullable=False),
    sa.Column('tenant_id', sa.Uuid(), nullable=False),
    sa.Column('job_id', sa.Uuid(), nullable=False),
    sa.Column('payload', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('occurred_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['cluster_id'], ['cluster.id'], name=op.f('fk_outbox_event_cluster_id_cluster'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('cluster_id', 'sequence', name=op.f('pk_outbox_event'))
    )
    op.create_table('job_event',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('job_id', sa.Uuid(), nullable=False),
    sa.Column('attempt', sa.Integer(), nullable=False),
    sa.Column('from_status', sa.String(length=20), nullable=True),
    sa.Column('to_status', sa.String(length=20), nullable=False),
    sa.Column('reason', sa.Text(), nullable=False),
    sa.Column('at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['job_id'], ['job.id'], name=op.f('fk_job_event_job_id_job'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_job_event'))
    )
    with op.batch_alter_table('job_event', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_job_event_job_id'), ['job_id'], unique=False)

    op.create_table('simulated_workload',
    sa.Column('cluster_id', sa.Uuid(), nullable=False),
    sa.Column('name', sa.String(length=63), nullable=False),
    sa.Column('job_id', sa.Uuid(), nullable=False),
    sa.Column('attempt', sa.Integer(), nullable=False),
    sa.Column('priority', sa.Integer(), nullable=False),
    sa.Column('gpu_type', sa.String(length=100), nullable=True),
    sa.Column('gpu_count', sa.Integer(), nullable=False),
    sa.Column('cpu_cores', sa.Float(), nullable=False),
    sa.Column('memory_gb', sa.Float(), nullable=False),
    sa.Column('runtime_seconds', sa.Float(), nullable=True),
    sa.Column('max_duration_seconds', sa.Float(), nullable=True),
    sa.Column('outcome', sa.String(length=20), nullable=False),
    sa.Column('phase', sa.String(length=20), nullable=False),
    sa.Column('reason', sa.Text(), nullable=False),
    sa.Column('node', sa.String(length=253), nullable=True),
    sa.Column('gpu_indices', sa.JSON(), nullable=False),
    sa.Column('created_at', sa.Float(), nullable=False),
    sa.Column('admitted_at', sa.Float(), nullable=True),
    sa.Column('started_at', sa.Float(), nullable=True),
    sa.Column('finished_at', sa.Float(), nullable=True),
    sa.Column('request', sa.String(length=20), nullable=True),
    sa.Column('request_reason', sa.Text(), nullable=True),
    sa.PrimaryKeyConstraint('cluster_id', 'name')
    )
    with op.batch_alter_table('simulated_workload', schema=None) as batch_op:
        batch_op.create_index('ix_simulated_workload_cluster_id_phase', ['cluster_id', 'phase'], unique=False)
        batch_op.create_index('ix_simulated_workload_job_id', ['job_id'], unique=False)



def downgrade() -> None:
    with op.batch_alter_table('simulated_workload', schema=None) as batch_op:
        batch_op.drop_index('ix_simulated_workload_job_id')
        batch_op.drop_index('ix_simulated_workload_cluster_id_phase')

    op.drop_table('simulated_workload')
    with op.batch_alter_table('job_event', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_job_event_job_id'))

    op.drop_table('job_event')
    op.drop_table('outbox_event')
    with op.batch_alter_table('job', schema=None) as batch_op:
        batch_op.drop_index('ix_job_tenant_id_created_at_id')
        batch_op.drop_index('ix_job_status_next_attempt_at')
        batch_op.drop_index('ix_job_cluster_id_status')

    op.drop_table('job')
    with op.batch_alter_table('cluster_node_info', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_cluster_node_info_cluster_id'))

    op.drop_table('cluster_node_info')
    op.drop_table('cluster_event_sequence')
    with op.batch_alter_table('cluster', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_cluster_status'))
        batch_op.drop_index(batch_op.f('ix_cluster_platform'))

    op.drop_table('cluster')
    with op.batch_alter_table('api_token', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_api_token_tenant_id'))

    op.drop_table('api_token')
