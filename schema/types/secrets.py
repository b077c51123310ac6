"""A tenant's named secrets (`Query.secrets`, `setSecret`, `removeSecret`): names and keys, never
values; and how a job or a deployment names them (`SecretRefInput`)."""

from __future__ import annotations

from datetime import datetime

import strawberry

from domain.model import tenant_secret as model


@strawberry.input(description="One key of a secret and its value (text).")
class SecretEntryInput:
    key: str = strawberry.field(
        description="Letters, digits, '-', '_' or '.' (a Kubernetes Secret's key); as an "
        "environment variable it must also be a shell's variable name."
    )
    value: str = strawberry.field(description="Never returned, logged or audited.")


@strawberry.input(
    description="A secret of your tenant's, stored sealed; replaces all the values of one of "
    "that name."
)
class SetSecretInput:
    tenant_id: strawberry.ID | None = strawberry.field(
        default=None, description="The tenant (the operator); null: your own."
    )
    name: str = strawberry.field(description="A DNS-1123 label of at most 63 characters.")
    data: list[SecretEntryInput] = strawberry.field(
        description=f"1 to {model.MAX_SECRET_KEYS} keys, at most {model.MAX_SECRET_BYTES} bytes "
        "in all."
    )


@strawberry.input(
    description="A secret a job's containers get: each key as an environment variable (no "
    "mountPath; a variable the spec's env sets as well keeps the spec's value), or each key as "
    "a file in the directory mountPath. Opened when an attempt is handed to its cluster."
)
class SecretRefInput:
    name: str = strawberry.field(description="One of your tenant's secrets.")
    mount_path: str | None = strawberry.field(
        default=None, description="An absolute directory for its keys as files; null: env."
    )

    def to_domain(self) -> model.SecretRef:
        return model.SecretRef(self.name, self.mount_path)


@strawberry.type(description="A secret a job or deployment names.")
class SecretRef:
    name: str
    mount_path: str | None

    @classmethod
    def from_domain(cls, ref: model.SecretRef) -> SecretRef:
        return cls(name=ref.name, mount_path=ref.mount_path)


@strawberry.type(
    description="A secret of a tenant's: its name and keys. Its values are never returned."
)
class Secret:
    id: strawberry.ID
    tenant_id: strawberry.ID
    name: str
    keys: list[str]
    version: int = strawberry.field(
        description="1, and one more each time its values were replaced."
    )
    created_at: datetime
    updated_at: datetime
    last_used_at: datetime | None = strawberry.field(
        description="When a job's attempt was last handed to its cluster with it (audited "
        "each time as secretUsed)."
    )

    @classmethod
    def from_domain(cls, s: model.TenantSecret) -> Secret:
        return cls(
            id=strawberry.ID(str(s.id)),
            tenant_id=strawberry.ID(str(s.tenant_id)),
            name=s.name,
            keys=list(s.keys),
            version=s.version,
            created_at=s.created_at,
            updated_at=s.updated_at,
            last_used_at=s.last_used_at,
        )
