"""Subscription events: each gets its own memo tables, and shared payloads execute once.

graphql-core 3.3 copies the subscription's executor for each event but keeps the memo tables
shared, so they grow with every event for the life of the subscription; ours are per event. A
payload marked shared is executed once per operation and variables; others every time. Large shared
results (snapshots) are kept apart, a few; the transport keeps encoded text of shared results only,
within a budget.
"""

from __future__ import annotations

import strawberry
from graphql import parse

from schema.execution import ExecutionContext


@strawberry.type
class Item:
    name: str
    shared: strawberry.Private[bool] = False


@strawberry.type
class Box:
    items: list[Item]


@strawberry.type
class Query:
    box: Box
    shared: strawberry.Private[bool] = False


schema = strawberry.Schema(query=Query)
DOCUMENT = parse("{ box { items { name } } }")


def executor() -> ExecutionContext:
    built = ExecutionContext.build(schema._schema, DOCUMENT)
    assert isinstance(built, ExecutionContext)
    return built


def test_each_event_has_its_own_memo_tables() -> None:
    base = executor()
    sizes = []
    for i in range(5):
        event = base.build_per_event_executor(Query(box=Box(items=[Item(name=str(i))])))
        assert event._relevant_sub_fields is not base._relevant_sub_fields
        assert event._stream_usages is not base._stream_usages
        event.execute_operation()
        sizes.append(len(base._relevant_sub_fields))
    assert sizes == [0] * 5


def test_a_shared_payload_is_executed_once_per_operation() -> None:
    base = executor()
    box = Box(items=[Item(name="a")])
    payload = Query(box=box, shared=True)
    first = base.build_per_event_executor(payload).execute_operation()
    box.items.append(Item(name="b"))  # a second execution would see it
    known = base.build_per_event_executor(payload)
    assert not isinstance(known, ExecutionContext)  # the result is known: no executor copied
    again = known.execute_operation()
    assert again is first
    assert first.data == {"box": {"items": [{"name": "a"}]}}

    other = ExecutionContext.build(schema._schema, parse("{ box { items { name } } }"))
    assert isinstance(other, ExecutionContext)
    fresh = other.build_per_event_executor(payload).execute_operation()
    assert fresh.data == {"box": {"items": [{"name": "a"}, {"name": "b"}]}}


def test_unshared_payloads_are_executed_every_time() -> None:
    base = executor()
    box = Box(items=[Item(name="a")])
    payload = Query(box=box)
    first = base.build_per_event_executor(payload).execute_operation()
    box.items.append(Item(name="b"))
    again = base.build_per_event_executor(payload).execute_operation()
    assert again.data == {"box": {"items": [{"name": "a"}, {"name": "b"}]}}
    assert first is not again


@strawberry.type
class Large:
    box: Box
    shared: strawberry.Private[bool] = True
    large: strawberry.Private[bool] = True


large_schema = strawberry.Schema(query=Large)


def test_large_shared_results_are_kept_few_and_known_by_identity() -> None:
    """A few large results are kept (a snapshot is megabytes); the transport serialises data
    once only while a shared result holds it, and forgets anything else."""
    from schema.execution import SHARED_LARGE_RESULTS, is_shared_data

    base = ExecutionContext.build(large_schema._schema, DOCUMENT)
    assert isinstance(base, ExecutionContext)
    results = [
        base.build_per_event_executor(Large(box=Box(items=[Item(name=str(i))]))).execute_operation()
        for i in range(SHARED_LARGE_RESULTS + 2)
    ]
    held = [is_shared_data(r.data) for r in results]
    assert held == [False, False] + [True] * SHARED_LARGE_RESULTS
    unshared = executor().build_per_event_executor(Query(box=Box(items=[]))).execute_operation()
    assert not is_shared_data(unshared.data)
    assert not is_shared_data({"box": {"items": [{"name": "0"}]}})  # equal is not the same


def test_the_transport_keeps_only_a_budget_of_encoded_text() -> None:
    from budcluster.http.view import _Encoded

    encoded = _Encoded(size=100, budget=1000)
    values = [{"text": "x" * 300} for _ in range(5)]
    for value in values:
        encoded.get(value)
    assert len(encoded._texts) == 3 and encoded._held <= 1000
    assert encoded.get(values[-1]) is encoded.get(values[-1])  # by identity, kept
