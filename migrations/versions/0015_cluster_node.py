"""The node table is called after what it holds: cluster_node_info becomes cluster_node

Its constraints and index follow the naming convention's new names (issue 28: one name per concept
across the layers; the entity is `Node`, its cluster's `nodes`).

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-27
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _rename(old: str, new: str) -> None:
    op.rename_table(old, new)
    if op.get_bind().dialect.name == "postgresql":
        for kind in ("pk", "fk", "uq"):
            suffix = {"pk": "", "fk": "_cluster_id_cluster", "uq": "_cluster_id_name"}[kind]
            op.execute(
                f"ALTER TABLE {new} RENAME CONSTRAINT {kind}_{old}{suffix} TO {kind}_{new}{suffix}"
            )
        op.execute(f"ALTER INDEX ix_{old}_cluster_id RENAME TO ix_{new}_cluster_id")
        return
    # SQLite: a table's constraints are named in its CREATE statement; the batch copy rewrites it
    op.drop_index(f"ix_{old}_cluster_id", table_name=new)
    with op.batch_alter_table(new, recreate="always") as batch:
        batch.drop_constraint(f"uq_{old}_cluster_id_name", type_="unique")
        batch.create_unique_constraint(f"uq_{new}_cluster_id_name", ["cluster_id", "name"])
        batch.create_index(f"ix_{new}_cluster_id", ["cluster_id"])


def upgrade() -> None:
    _rename("cluster_node_info", "cluster_node")


def downgrade() -> None:
    _rename("cluster_node", "cluster_node_info")
