"""A tenant's named secrets, and how a job or a deployment refers to them.

A tenant stores a secret under a name (`setSecret`): a few keys, each with a text value (a gated
model's token, a registry password, a certificate). It is sealed as a kubeconfig is (an envelope
bound to the tenant and the name: opened for another, it fails) and never returned, logged or
audited with its values: what anyone reads back is its name, its keys and when it changed. A job
spec or `deployModel` names it (`SecretRef`): every key as an environment variable of the job's
containers, or, with a mount path, every key as a file there. The secret is opened when an
attempt is handed to its cluster (and audited as used, each time); on Kubernetes it becomes a
Secret in the tenant's namespace owned by the attempt's Job, removed with it.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import NewType

from domain.errors import FieldIssue
from domain.model.ids import TenantId
from domain.model.secrets import Envelope
from domain.names import name_problem, text_problem

TenantSecretId = NewType("TenantSecretId", uuid.UUID)

MAX_SECRET_NAME = 63
"""A DNS-1123 label: the name goes into the Kubernetes Secret's (`secret_object_name`)."""
MAX_SECRET_KEYS = 32
MAX_SECRET_BYTES = 512 * 1024
"""All of a secret's keys and values, UTF-8: half of Kubernetes' 1 MiB limit on a Secret, which
base64 (4/3) and the object's metadata must fit in."""
MAX_KEY_LENGTH = 253
"""Kubernetes' limit on a Secret's data key."""
MAX_SECRETS_PER_TENANT = 200
"""Enough for a team's tokens and registries; each is a row and, per job, a Kubernetes object."""
MAX_SECRET_REFS = 8
"""Secrets one job may name."""
MAX_MOUNT_PATH = 256

SECRET_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
"""Kubernetes' Secret data keys (validation.IsConfigMapKey)."""
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
"""What every shell reads as a variable name (Kubernetes allows more, and skips nothing it
allows; a shell would not see the rest)."""


def new_tenant_secret_id() -> TenantSecretId:
    return TenantSecretId(uuid.uuid4())


def secret_owner(tenant_id: TenantId, name: str) -> str:
    """What a secret's envelope is bound to: opened as another tenant's or name's, it fails."""
    return f"tenant-secret:{tenant_id}:{name}"


@dataclass(frozen=True)
class TenantSecret:
    id: TenantSecretId
    tenant_id: TenantId
    name: str
    keys: tuple[str, ...]
    """Its keys, sorted (what may be read back)."""
    sealed: Envelope = field(repr=False)
    """Its values: a JSON object of key to text, sealed (`secret_owner`)."""
    created_at: datetime
    updated_at: datetime
    created_by: str
    version: int = 1
    """1, and one more each time its values are replaced."""
    last_used_at: datetime | None = None
    """When an attempt was last handed over with it."""

    def replaced(self, keys: tuple[str, ...], sealed: Envelope, now: datetime) -> TenantSecret:
        return TenantSecret(
            self.id,
            self.tenant_id,
            self.name,
            keys,
            sealed,
            self.created_at,
            now,
            self.created_by,
            self.version + 1,
            self.last_used_at,
        )


@dataclass(frozen=True)
class SecretRef:
    """A secret a job names: each key as an environment variable (no `mount_path`), or each key
    as a file in the directory `mount_path`."""

    name: str
    mount_path: str | None = None

    @property
    def as_env(self) -> bool:
        return self.mount_path is None


@dataclass(frozen=True)
class MountedSecret:
    """A secret opened for an attempt's hand-over: what the cluster is given. Its values are
    never printed (repr)."""

    ref: SecretRef
    data: Mapping[str, str] = field(repr=False)

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(sorted(self.data))


def plaintext(data: Mapping[str, str]) -> bytes:
    """What is sealed: the values as a JSON object (sorted keys)."""
    return json.dumps(dict(data), sort_keys=True, separators=(",", ":")).encode()


def from_plaintext(raw: bytes) -> dict[str, str]:
    data = json.loads(raw)
    if not isinstance(data, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in data.items()
    ):
        raise ValueError("not a sealed secret's values")
    return data


def secret_name_issues(name: str, path: str = "name") -> list[FieldIssue]:
    problem = text_problem(name) or name_problem(name, max_length=MAX_SECRET_NAME)
    return [FieldIssue(path, problem, "INVALID_NAME")] if problem else []


def data_issues(entries: Sequence[tuple[str, str]], path: str = "data") -> list[FieldIssue]:
    """What is wrong with a secret's keys and values (the values are never quoted)."""
    issues: list[FieldIssue] = []
    if not entries:
        return [FieldIssue(path, "must hold at least one key", "REQUIRED")]
    if len(entries) > MAX_SECRET_KEYS:
        return [FieldIssue(path, f"must hold at most {MAX_SECRET_KEYS} keys", "TOO_MANY")]
    seen: set[str] = set()
    size = 0
    for i, (key, value) in enumerate(entries):
        where = f"{path}[{i}]"
        if not SECRET_KEY.match(key) or len(key) > MAX_KEY_LENGTH or key in (".", ".."):
            issues.append(
                FieldIssue(
                    f"{where}.key",
                    f"must be 1 to {MAX_KEY_LENGTH} letters, digits, '-', '_' or '.' "
                    "(a Kubernetes Secret's key), not '.' or '..'",
                    "INVALID",
                )
            )
        elif key in seen:
            issues.append(FieldIssue(f"{where}.key", f"key {key} is given twice", "DUPLICATE"))
        seen.add(key)
        if problem := text_problem(value):
            issues.append(FieldIssue(f"{where}.value", problem))
            continue
        size += len(key.encode()) + len(value.encode())
    if size > MAX_SECRET_BYTES:
        issues.append(
            FieldIssue(path, f"must be at most {MAX_SECRET_BYTES} bytes in all", "TOO_LARGE")
        )
    return issues


def ref_issues(refs: Sequence[SecretRef], path: str = "secrets") -> list[FieldIssue]:
    """What is wrong with the secrets a job names, before they are looked up."""
    if len(refs) > MAX_SECRET_REFS:
        return [FieldIssue(path, f"must name at most {MAX_SECRET_REFS} secrets", "TOO_MANY")]
    issues: list[FieldIssue] = []
    names: set[str] = set()
    paths: set[str] = set()
    for i, ref in enumerate(refs):
        issues.extend(secret_name_issues(ref.name, f"{path}[{i}].name"))
        if ref.name in names:
            issues.append(
                FieldIssue(f"{path}[{i}].name", f"secret {ref.name} is named twice", "DUPLICATE")
            )
        names.add(ref.name)
        if ref.mount_path is None:
            continue
        if problem := mount_path_problem(ref.mount_path):
            issues.append(FieldIssue(f"{path}[{i}].mount_path", problem))
        elif any(_nested(ref.mount_path, other) for other in paths):
            issues.append(
                FieldIssue(
                    f"{path}[{i}].mount_path",
                    "must not be, or be inside or above, another secret's mount path",
                    "DUPLICATE",
                )
            )
        paths.add(ref.mount_path.rstrip("/"))
    return issues


def mount_path_problem(mount_path: str) -> str | None:
    if problem := text_problem(mount_path):
        return problem
    parts = mount_path.split("/")
    if (
        not mount_path.startswith("/")
        or len(mount_path) > MAX_MOUNT_PATH
        or mount_path.rstrip("/") == ""
        or any(p in (".", "..") for p in parts)
        or ":" in mount_path
        or not mount_path.isprintable()
    ):
        return (
            f"must be an absolute directory path of at most {MAX_MOUNT_PATH} printable "
            "characters, not /, without '.', '..' or ':'"
        )
    return None


def _nested(path: str, other: str) -> bool:
    a, b = path.rstrip("/") + "/", other.rstrip("/") + "/"
    return a.startswith(b) or b.startswith(a)


def usable_issues(
    refs: Sequence[SecretRef], found: Mapping[str, TenantSecret], path: str = "secrets"
) -> list[FieldIssue]:
    """What is wrong with the named secrets as the tenant stores them: missing ones, and keys
    an environment can't carry."""
    issues: list[FieldIssue] = []
    for i, ref in enumerate(refs):
        secret = found.get(ref.name)
        if secret is None:
            issues.append(
                FieldIssue(f"{path}[{i}].name", f"no secret {ref.name} of yours", "NOT_FOUND")
            )
        elif ref.as_env and (bad := [k for k in secret.keys if not ENV_NAME.match(k)]):
            issues.append(
                FieldIssue(
                    f"{path}[{i}].name",
                    f"secret {ref.name}'s key {bad[0]} is not an environment variable name "
                    "(letters, digits and '_', not starting with a digit): give a `mount_path` "
                    "to have its keys as files",
                    "NOT_AN_ENV_NAME",
                )
            )
    return issues
