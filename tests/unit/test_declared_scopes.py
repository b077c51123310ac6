"""Scopes and refusals declared on resolvers (schema/access.py, schema/refusals.py) and the one
subscription loop (resolvers/streams.py).

- every root field of the schema declares the scopes it needs, or is listed as public; a field
  that declares nothing is caught; every mutation answers refusals with typed errors;
- a missing scope is refused before the body runs: a ForbiddenError value where the resolver
  answers with typed errors, else the GraphQL error FORBIDDEN; Unauthenticated likewise;
- the decorators refuse to be stacked the wrong way round;
- a refused argument names its field; the relayed stream maps an unknown object to NOT_FOUND,
  refreshes DataLoaders where asked, and closes the domain's stream however it ends.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from types import SimpleNamespace
from typing import Any

import pytest
import strawberry

from domain.errors import Conflict, NotFound, Unauthenticated, ValidationFailed
from domain.model.principal import Scope
from resolvers.streams import relay, resumable
from schema.access import required_scopes, requires
from schema.refusals import answers_of, argument_error, typed_errors
from schema.schema import schema
from schema.types import errors
from schema.types.errors import UserInputError

PUBLIC: frozenset[str] = frozenset()
"""Root fields (Query.job_events: Python names) any authenticated caller may use, whatever its
token's scopes."""


def undeclared(built: strawberry.Schema) -> list[str]:
    """The root fields whose resolvers declare no scopes and are not public."""
    missing = []
    for root in ("Query", "Mutation", "Subscription"):
        definition = built.get_type_by_name(root)
        if definition is None:
            continue
        for field in definition.fields:  # type: ignore[union-attr]
            name = f"{root}.{field.python_name}"
            resolver = field.base_resolver
            scopes = required_scopes(resolver.wrapped_func) if resolver else None
            if not scopes and name not in PUBLIC:
                missing.append(name)
    return missing


def test_every_root_field_declares_its_scopes() -> None:
    assert undeclared(schema) == []


def test_a_field_without_declared_scopes_is_caught() -> None:
    async def undeclared_resolver(info: strawberry.Info) -> int:
        return 1

    @requires(Scope.JOBS_READ)
    async def declared_resolver(info: strawberry.Info) -> int:
        return 2

    @strawberry.type
    class Query:
        open_to_all: int = strawberry.field(resolver=undeclared_resolver)
        guarded: int = strawberry.field(resolver=declared_resolver)

    assert undeclared(strawberry.Schema(query=Query)) == ["Query.open_to_all"]


def test_every_mutation_answers_refusals_with_typed_errors() -> None:
    mutation = schema.get_type_by_name("Mutation")
    assert mutation is not None
    for field in mutation.fields:  # type: ignore[union-attr]
        assert field.base_resolver is not None
        assert answers_of(field.base_resolver.wrapped_func) is not None, field.name


# --- the refusal, as each kind of resolver answers it ------------------------------------------


def info_of(*scopes: Scope, authenticated: bool = True) -> Any:
    def principal() -> Any:
        if not authenticated:
            raise Unauthenticated("token revoked")
        return SimpleNamespace(has=lambda scope: scope in scopes)

    return SimpleNamespace(context=SimpleNamespace(authenticated=principal))


ran: list[str] = []


@requires(Scope.JOBS_WRITE)
@typed_errors
async def command(info: Any, value: int) -> Any:
    ran.append("command")
    if value < 0:
        raise ValidationFailed.single("value", "must not be negative")
    return value


@requires(Scope.CLUSTERS_READ, Scope.JOBS_READ)
async def query(info: Any) -> int:
    ran.append("query")
    return 1


@requires(Scope.JOBS_READ)
def stream(info: Any) -> AsyncGenerator[int, None]:
    ran.append("stream")

    async def numbers() -> AsyncGenerator[int, None]:
        yield 1

    return numbers()


async def test_a_command_answers_a_missing_scope_with_its_forbidden_error() -> None:
    ran.clear()
    refused = await command(info=info_of(Scope.JOBS_READ), value=1)
    assert isinstance(refused, errors.ForbiddenError)
    assert (refused.code, refused.message) == ("FORBIDDEN", "this token lacks the jobs:write scope")
    assert ran == []
    assert await command(info_of(Scope.JOBS_WRITE), 2) == 2
    invalid = await command(info=info_of(Scope.JOBS_WRITE), value=-1)
    assert isinstance(invalid, errors.ValidationError)
    assert invalid.fields[0].path == "value"
    unauthenticated = await command(info=info_of(authenticated=False), value=1)
    assert isinstance(unauthenticated, errors.ConflictError)
    assert unauthenticated.code == "UNAUTHENTICATED"


async def test_a_query_raises_forbidden_naming_the_first_missing_scope() -> None:
    ran.clear()
    with pytest.raises(UserInputError) as refused:
        await query(info=info_of(Scope.JOBS_READ))
    assert str(refused.value) == "this token lacks the clusters:read scope"
    assert refused.value.extensions == {"code": "FORBIDDEN"}
    with pytest.raises(UserInputError, match="jobs:read"):
        await query(info=info_of(Scope.CLUSTERS_READ))
    with pytest.raises(Unauthenticated):
        await query(info=info_of(authenticated=False))
    assert ran == []
    assert await query(info=info_of(Scope.CLUSTERS_READ, Scope.JOBS_READ)) == 1


async def test_a_subscription_is_refused_when_its_stream_is_asked_for() -> None:
    ran.clear()
    with pytest.raises(UserInputError, match="jobs:read"):
        stream(info=info_of(Scope.CLUSTERS_READ))
    assert ran == []
    assert [n async for n in stream(info=info_of(Scope.JOBS_READ))] == [1]
    assert required_scopes(stream) == (Scope.JOBS_READ,)


def test_the_decorators_refuse_the_wrong_order() -> None:
    with pytest.raises(TypeError, match="put @requires above @typed_errors"):

        @typed_errors
        @requires(Scope.JOBS_WRITE)
        async def backwards(info: Any) -> int:
            return 1

    with pytest.raises(TypeError, match="returns its stream"):

        @requires(Scope.JOBS_READ)
        async def generator(info: Any) -> AsyncGenerator[int, None]:
            yield 1


def test_a_refused_argument_names_its_field() -> None:
    with pytest.raises(UserInputError) as invalid, argument_error("first"):
        raise ValidationFailed.single("first", "must be between 1 and 100")
    assert invalid.value.extensions == {"code": "BAD_USER_INPUT", "field": "first"}
    with pytest.raises(UserInputError) as missing, argument_error("ids"):
        raise NotFound("benchmark", "b1")
    assert str(missing.value) == "benchmark b1 not found"
    assert missing.value.extensions == {"code": "NOT_FOUND", "field": "ids"}
    with pytest.raises(Conflict), argument_error("id", catching=NotFound, message="no such"):
        raise Conflict("not this kind")


# --- the one subscription loop ------------------------------------------------------------------


class DomainStream:
    def __init__(self, items: list[int]) -> None:
        self.items = items
        self.closed = False

    def __aiter__(self) -> DomainStream:
        return self

    async def __anext__(self) -> int:
        if not self.items:
            raise StopAsyncIteration
        return self.items.pop(0)

    async def aclose(self) -> None:
        self.closed = True


def stream_info() -> Any:
    context = SimpleNamespace(refreshed=0)
    context.refresh_loaders = lambda: setattr(context, "refreshed", context.refreshed + 1)
    return SimpleNamespace(context=context)


async def test_relay_sends_each_update_as_its_message_and_closes_the_stream() -> None:
    info, domain = stream_info(), DomainStream([1, 2, 3])

    async def open_stream() -> Any:
        return domain

    relayed = relay(info, open_stream, lambda n: n * 10, fresh_loaders=True)
    assert await relayed.__anext__() == 10
    assert info.context.refreshed == 1
    await relayed.aclose()  # the client's `complete`
    assert domain.closed
    again = DomainStream([1, 2])

    async def open_again() -> Any:
        return again

    assert [m async for m in relay(info, open_again, str)] == ["1", "2"]
    assert again.closed and info.context.refreshed == 1


async def test_relay_refuses_an_unknown_object_naming_the_argument() -> None:
    async def unknown() -> Any:
        raise NotFound("benchmark", "b1")

    with pytest.raises(UserInputError) as refused:
        await relay(
            stream_info(), unknown, str, missing="no such benchmark", field="id"
        ).__anext__()
    assert str(refused.value) == "no such benchmark"
    assert refused.value.extensions == {"code": "NOT_FOUND", "field": "id"}


def test_a_resumable_stream_checks_its_arguments() -> None:
    with pytest.raises(UserInputError, match="clusterId is not a valid id"):
        resumable(strawberry.ID("nope"), None)
    with pytest.raises(UserInputError, match="since must not be negative"):
        resumable(strawberry.ID("00000000-0000-0000-0000-000000000001"), -1)
