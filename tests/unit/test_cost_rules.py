"""schema/cost.py prices every list of the schema by an explicit rule.

Covers: a walk of the whole schema (graphql-core's, as served) finds no list field and no
connection without a rule of its own (PAGES, LIST_SIZES, FLAT_TYPES, FIELD_COSTS), no rule left
for a field that is gone, and every page with its size argument; a page costs the size it asks
for (its argument's default otherwise), never more than its maximum, so 20 aliases of
`samples(first: 10000)` cost far more than the budget (they cost 31 points); each item of a list
of objects costs a point; a document's text a point per KiB.
"""

from __future__ import annotations

from typing import Any

from graphql import (
    FragmentDefinitionNode,
    GraphQLField,
    GraphQLInterfaceType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    OperationDefinitionNode,
    get_named_type,
    parse,
)

from schema import cost
from schema.schema import schema

CORE = schema._schema


def fields() -> dict[str, GraphQLField]:
    found = {}
    for name, kind in CORE.type_map.items():
        if name.startswith("__") or not isinstance(kind, GraphQLObjectType | GraphQLInterfaceType):
            continue
        for field_name, field in kind.fields.items():
            found[f"{name}.{field_name}"] = field
    return found


def is_list(field: GraphQLField) -> bool:
    kind: Any = field.type
    return isinstance(kind.of_type if isinstance(kind, GraphQLNonNull) else kind, GraphQLList)


def is_page(field: GraphQLField) -> bool:
    return get_named_type(field.type).name.endswith("Connection") or any(
        a in field.args for a in ("first", "last", "limit", "offset")
    )


def test_every_list_and_connection_has_a_rule() -> None:
    unruled = []
    for key, field in fields().items():
        parent = key.split(".")[0]
        target = get_named_type(field.type).name
        if not (is_list(field) or is_page(field)) or parent in cost.FLAT_TYPES:
            continue
        if key in cost.FIELD_COSTS and target in cost.FLAT_TYPES:
            continue  # its own cost pays for all it returns
        if is_page(field) and key not in cost.PAGES:
            unruled.append(f"{key} (a page: needs a PAGES entry)")
        elif not is_page(field) and key not in cost.LIST_SIZES:
            unruled.append(f"{key} (a list: needs a LIST_SIZES entry)")
    assert unruled == []


def test_no_rule_is_left_for_a_field_that_is_gone() -> None:
    known = fields()
    for key in [*cost.LIST_SIZES, *cost.FIELD_COSTS]:
        assert key in known, key
    for key, page in cost.PAGES.items():
        assert key in known and page.argument in known[key].args, key
        assert page.maximum > 0
    for name in cost.FLAT_TYPES:
        assert name in CORE.type_map, name


def priced(text: str, variables: dict[str, Any] | None = None) -> int:
    document = parse(text)
    [operation] = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    fragments = {
        d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
    }
    return cost.operation_cost(CORE, operation, fragments, variables)


def test_a_page_costs_its_size_up_to_its_maximum() -> None:
    samples = "{ benchmark(id: 1) { samples(first: %d) { index } } }"
    assert priced(samples % 10) == cost.BASE + 1 + 10
    assert priced(samples % 10_000) == priced(samples % cost.SAMPLES_PAGE)
    assert priced("{ benchmark(id: 1) { samples { index } } }") == cost.BASE + 1 + 1000  # default
    with_gaps = "{ benchmark(id: 1) { samples(first: 10) { itlMs } } }"
    assert priced(with_gaps) == cost.BASE + 1 + round(10 * (1 + 128 / cost.LEAVES_PER_POINT))
    aliases = "{ b: benchmark(id: 1) { " + " ".join(
        f"s{i}: samples(first: 10000) {{ index }}" for i in range(20)
    )
    assert priced(aliases + " } }") > 10_000  # the budget: they cost 31 points
    jobs = "query($n: Int) { jobs(first: $n) { edges { node { id } } } }"
    assert priced(jobs, {"n": 7}) == cost.BASE + 1 + 7 * 2
    assert priced(jobs, {"n": 5000}) == cost.BASE + 1 + 100 * 2
    assert priced(jobs, {}) == cost.BASE + 1 + 50 * 2  # the argument's default


def test_list_items_cost_a_point_each_and_text_a_point_per_kib() -> None:
    assert priced("{ clusters { id } }") == cost.BASE + cost.LIST_SIZES["Query.clusters"]
    assert priced("{ jobEvents(jobId: 1) { at } }") == cost.BASE + 50
    assert cost.text_cost("x" * 1023) == 0 and cost.text_cost("x" * 10 * 1024) == 10
