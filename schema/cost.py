"""What an operation costs, worked out from its document before anything runs.

A point is roughly one object the server reads or builds. Every operation costs BASE; an
object-valued field costs 1 (scalars cost nothing) plus what it selects; a list multiplies what
it selects by its size: the `first` a connection asks for (its default otherwise), else the size
named in LIST_SIZES, else DEFAULT_LIST_SIZE. Some fields cost more than the objects they return
(FIELD_COSTS): a schedule costs by the length of its window (it cuts every segment of the
cluster's timeline), a preview runs the estimator, a registration parses and seals a kubeconfig.
What such a field returns is paid by that cost, so the types under it (FLAT_TYPES) add nothing.
Introspection costs INTROSPECTION, whatever it selects.

The cost is an upper bound from the document alone (a list may turn out shorter), so a client can
work it out too; `extensions.cost` of every response says what was charged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any

from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLField,
    GraphQLList,
    GraphQLNamedType,
    GraphQLNonNull,
    GraphQLSchema,
    InlineFragmentNode,
    OperationDefinitionNode,
    SelectionSetNode,
    get_named_type,
    is_leaf_type,
    value_from_ast_untyped,
)

BASE = 10
DEFAULT_LIST_SIZE = 10
INTROSPECTION = 50
MAX_PAGE = 100

Arguments = Mapping[str, Any]


def _hours(arguments: Arguments, default: float = 25.0) -> float:
    """The hours a window asked for spans (as Cluster.schedule defaults them); arguments the
    schedule will refuse cost the default: they never run."""
    start, end = arguments.get("from"), arguments.get("to")
    try:
        begin = datetime.fromisoformat(str(start)) if start else None
        finish = datetime.fromisoformat(str(end)) if end else None
        if begin is not None and finish is not None:
            span = finish - begin
        else:
            span = timedelta(hours=24 if begin is not None else default)
        return max(1.0, span.total_seconds() / 3600)
    except (ValueError, TypeError, OverflowError):
        return default


def _schedule(arguments: Arguments) -> float:
    return 10 + 2 * _hours(arguments)


FIELD_COSTS: dict[str, Callable[[Arguments], float]] = {
    "Cluster.schedule": _schedule,
    "Subscription.scheduleTimeline": _schedule,
    "Query.previewJob": lambda _: 100,
    "Cluster.estimateAccuracy": lambda _: 20,
    "Cluster.health": lambda _: 2,
    "Job.kueuePosition": lambda _: 5,
    "Mutation.registerCluster": lambda _: 50,
    "Mutation.updateCluster": lambda _: 50,
    "Mutation.refreshCluster": lambda _: 20,
    "Subscription.jobUpdates": lambda _: 50,
    "Subscription.clusterUpdates": lambda _: 20,
}
"""A field's own cost, by `Type.field`, from its arguments; 1 for other object fields."""

FLAT_TYPES = frozenset(
    {
        "Schedule",
        "ScheduleDiff",
        "TimelineRow",
        "TimelineSegment",
        "QueueEntry",
        "GpuForecast",
        "ForecastPoint",
        "JobPreview",
        "EstimateAccuracy",
        "HealthCheck",
        "KueueQueuePosition",
    }
)
"""Types whose fields are paid for by the field that returned them."""

PAGES: dict[str, int] = {"Query.jobs": 50}
"""Connections sized by their `first` argument, with its default."""

LIST_SIZES: dict[str, int] = {
    "JobConnection.edges": 1,  # the connection's `first` multiplies already
    "Query.clusters": 10,
    "Cluster.nodes": 50,
    "JobSnapshot.jobs": 200,
    "ClusterSnapshot.nodes": 50,
    "ClusterChange.nodes": 50,
    "Query.workloadPriorityClasses": 5,
}


def _unwrap(field: GraphQLField) -> tuple[bool, GraphQLNamedType]:
    kind: Any = field.type
    if isinstance(kind, GraphQLNonNull):
        kind = kind.of_type
    return isinstance(kind, GraphQLList), get_named_type(kind)


class _Costing:
    def __init__(
        self,
        schema: GraphQLSchema,
        fragments: Mapping[str, FragmentDefinitionNode],
        variables: Mapping[str, Any],
    ) -> None:
        self.schema = schema
        self.fragments = fragments
        self.variables = dict(variables)

    def arguments(self, node: FieldNode) -> dict[str, Any]:
        return {
            arg.name.value: value_from_ast_untyped(arg.value, self.variables)
            for arg in node.arguments or ()
        }

    def selection(
        self, parent: GraphQLNamedType, selections: SelectionSetNode, depth: int
    ) -> float:
        if depth > 32:  # validation bounds depth far lower; this only guards the recursion
            return 0.0
        total = 0.0
        for node in selections.selections:
            if isinstance(node, FieldNode):
                total += self.field(parent, node, depth)
            elif isinstance(node, InlineFragmentNode):
                target = (
                    self.schema.get_type(node.type_condition.name.value)
                    if node.type_condition
                    else parent
                )
                if target is not None:
                    total += self.selection(target, node.selection_set, depth + 1)
            elif isinstance(node, FragmentSpreadNode):
                fragment = self.fragments.get(node.name.value)
                target = (
                    self.schema.get_type(fragment.type_condition.name.value) if fragment else None
                )
                if fragment is not None and target is not None:
                    total += self.selection(target, fragment.selection_set, depth + 1)
        return total

    def field(self, parent: GraphQLNamedType, node: FieldNode, depth: int) -> float:
        name = node.name.value
        if name.startswith("__"):
            return 0.0 if name == "__typename" else INTROSPECTION
        fields = getattr(parent, "fields", None) or {}
        if name not in fields:  # validation lets only known fields through
            return 0.0
        field = fields[name]
        is_list, target = _unwrap(field)
        key = f"{parent.name}.{name}"
        arguments = self.arguments(node)
        if parent.name in FLAT_TYPES:
            return 0.0
        if key in FIELD_COSTS:
            own = FIELD_COSTS[key](arguments)
        elif is_leaf_type(target):
            return 0.0
        else:
            own = 1.0
        if node.selection_set is None or target.name in FLAT_TYPES:
            return own
        size = 1.0
        if key in PAGES:
            first = arguments.get("first", PAGES[key])
            size = float(min(max(first, 0), MAX_PAGE)) if isinstance(first, int) else PAGES[key]
        elif is_list:
            size = float(LIST_SIZES.get(key, DEFAULT_LIST_SIZE))
        return own + size * self.selection(target, node.selection_set, depth + 1)


def operation_cost(
    schema: GraphQLSchema,
    operation: OperationDefinitionNode,
    fragments: Mapping[str, FragmentDefinitionNode],
    variables: Mapping[str, Any] | None,
) -> int:
    root = schema.get_root_type(operation.operation)
    if root is None:
        return BASE
    costing = _Costing(schema, fragments, variables or {})
    return BASE + round(costing.selection(root, operation.selection_set, 0))
