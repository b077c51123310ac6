"""Errors the core raises.

`DomainError` subclasses are outcomes a user can act on: the GraphQL layer turns each into a typed
union member (ValidationError, NotFoundError, ConflictError, ForbiddenError) carrying a stable code,
a message and, where it applies, the path of the offending input field. Anything else that escapes
is a bug or an outage and is masked before it reaches a client.
"""

from __future__ import annotations

from dataclasses import dataclass


class DomainError(Exception):
    code = "DOMAIN_ERROR"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class FieldIssue:
    """One problem with one input field. `field` is a dotted path in the domain's names, e.g.
    `resources.gpu_count`; a message names another field the same way, in backticks, and the
    API renders both in its own names. Keys inside `spec` are the user's and stay as given."""

    field: str
    message: str
    code: str = "INVALID"


class ValidationFailed(DomainError):
    code = "VALIDATION_FAILED"

    def __init__(self, issues: list[FieldIssue]) -> None:
        if not issues:
            raise ValueError("ValidationFailed needs at least one issue")
        super().__init__("; ".join(f"{i.field}: {i.message}" for i in issues))
        self.issues = tuple(issues)

    @classmethod
    def single(cls, field: str, message: str, code: str = "INVALID") -> ValidationFailed:
        return cls([FieldIssue(field, message, code)])


class NotFound(DomainError):
    code = "NOT_FOUND"

    def __init__(self, entity: str, entity_id: object) -> None:
        super().__init__(f"{entity} {entity_id} not found")
        self.entity = entity
        self.entity_id = str(entity_id)


class Conflict(DomainError):
    code = "CONFLICT"

    def __init__(self, message: str, code: str = "CONFLICT") -> None:
        super().__init__(message)
        self.code = code


class InvalidTransition(Conflict):
    def __init__(self, job_id: object, current: str, target: str) -> None:
        super().__init__(
            f"job {job_id} cannot move from {current} to {target}", code="INVALID_TRANSITION"
        )
        self.current = current
        self.target = target


class Forbidden(DomainError):
    code = "FORBIDDEN"


class Unauthenticated(DomainError):
    code = "UNAUTHENTICATED"

    def __init__(self, message: str = "a valid bearer token is required") -> None:
        super().__init__(message)


class Unavailable(Exception):
    """A store the service depends on (its database, its broker) does not answer. An outage,
    not a user's mistake: clients are told UNAVAILABLE and when to try again, and nothing that
    was committed before it is undone."""

    def __init__(self, what: str, *, retry_after_seconds: int = 5) -> None:
        super().__init__(f"{what} does not answer")
        self.what = what
        self.retry_after_seconds = retry_after_seconds


class DuplicateIdempotencyKey(Exception):
    """Raised by a job repository when (tenant, idempotency_key) already exists; not user-facing."""


class SecretUnreadable(DomainError):
    """A sealed secret could not be opened: tampered with, bound to another owner, or sealed
    with a key the keyring does not hold."""

    code = "SECRET_UNREADABLE"


class SecretsUnavailable(DomainError):
    """This service has no keys to seal or open secrets with (a configuration matter)."""

    code = "SECRETS_UNAVAILABLE"


class ClusterConnectionError(DomainError):
    """Talking to a cluster's API server failed. `kind` says how: invalid_kubeconfig (the
    kubeconfig itself is unusable; `field` names the part), unreachable, unauthorized,
    forbidden, error."""

    code = "CLUSTER_CONNECTION"

    def __init__(self, kind: str, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.field = field

    def __reduce__(self) -> tuple[object, ...]:
        """Pickled whole: it comes back from the worker process that parsed a kubeconfig."""
        return (_connection_error, (self.kind, self.message, self.field))


def _connection_error(kind: str, message: str, field: str | None) -> ClusterConnectionError:
    return ClusterConnectionError(kind, message, field=field)
