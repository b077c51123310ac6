"""domain/services/refusals.py: refusals reach the audit trail within limits, and say enough.

Covers: a refusal's event names the caller (its token and tenant when it was authenticated; its
address otherwise, with no tenant: the operator's alone), the operation, the transport and the
address, with the code as its outcome; an operation name that is no GraphQL name is not kept; at
most `per_key` events a minute for one key and `overall` in all; what was not recorded is counted
and said by the key's next event; a store that fails leaves the count for the next one.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest

from domain.model.ids import TenantId
from domain.services.refusals import Refusal, RefusalRecords
from tests.support.fakes import FakeClock, FakeUnitOfWorkFactory

CLOCK = FakeClock()


def records(per_key: int = 3, overall: int = 100) -> tuple[RefusalRecords, FakeUnitOfWorkFactory]:
    uow = FakeUnitOfWorkFactory()
    return RefusalRecords(uow=uow, clock=CLOCK, per_key=per_key, overall=overall), uow


def anonymous(code: str = "FIELD_LIMIT_EXCEEDED", address: str = "203.0.113.9") -> Refusal:
    return Refusal(code=code, operation="Probe", address=address, transport="http")


async def test_an_event_says_who_what_and_why_never_more() -> None:
    refusals, uow = records()
    tenant, token = TenantId(uuid.uuid4()), uuid.uuid4()
    await refusals.record(anonymous())
    await refusals.record(
        Refusal("COST_LIMIT_EXCEEDED", "{ x }", "198.51.100.1", "websocket", tenant, token)
    )
    first, second = uow.store.audit
    assert (first.actor, first.tenant_id, first.token_id) == ("address:203.0.113.9", None, None)
    assert (first.operation, first.outcome, first.source) == ("Probe", "FIELD_LIMIT_EXCEEDED",
                                                               "graphql")  # fmt: skip
    assert first.input == {"address": "203.0.113.9", "transport": "http"}
    assert first.targets == ()
    assert (second.actor, second.tenant_id, second.token_id) == (f"token:{token}", tenant, token)
    assert second.operation == "(unnamed)"  # `{ x }` is no name: text is never kept
    assert second.input == {"address": "198.51.100.1", "transport": "websocket"}


async def test_a_flood_is_recorded_a_few_times_a_minute_and_counted() -> None:
    refusals, uow = records(per_key=3)
    written = [await refusals.record(anonymous()) for _ in range(50)]
    assert written == [True] * 3 + [False] * 47
    assert await refusals.record(anonymous(address="192.0.2.7"))  # another key
    CLOCK.current += timedelta(seconds=59)
    assert not await refusals.record(anonymous())
    CLOCK.current += timedelta(seconds=1)
    assert await refusals.record(anonymous())
    assert len(uow.store.audit) == 5
    assert uow.store.audit[-1].input["unrecorded"] == 48  # those of the last minute
    assert "unrecorded" not in uow.store.audit[-2].input


async def test_the_process_records_at_most_overall_a_minute() -> None:
    refusals, uow = records(per_key=3, overall=4)
    written = [await refusals.record(anonymous(address=f"192.0.2.{i}")) for i in range(10)]
    assert written == [True] * 4 + [False] * 6
    CLOCK.current += timedelta(minutes=1)
    assert await refusals.record(anonymous(address="192.0.2.9"))
    assert uow.store.audit[-1].input["unrecorded"] == 1


async def test_a_failed_write_is_counted_for_the_next_one(monkeypatch: pytest.MonkeyPatch) -> None:
    refusals, uow = records()

    async def down(*_: object) -> None:
        raise ConnectionError("the database does not answer")

    monkeypatch.setattr("tests.support.fakes.FakeAuditRepository.add", down)
    with pytest.raises(ConnectionError):
        await refusals.record(anonymous())
    monkeypatch.undo()
    assert await refusals.record(anonymous())
    assert uow.store.audit[-1].input["unrecorded"] == 1
