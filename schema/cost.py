"""What an operation costs, worked out from its document before it is validated or run.

A point is roughly one object the server reads or builds. Every operation costs BASE, and one
point per KiB of its text (parsing it is work too); an object-valued field costs 1 (scalars cost
nothing) plus what it selects; a list of objects costs 1 for each item and what the item selects,
times its size (a connection's page multiplies what it selects likewise). Every list field of
the schema has a rule here (a test walks the schema for any without): a page (PAGES: a
connection, or a list with a `first` argument) is as long as its `first` asks, its argument's
default otherwise, and never longer than its maximum (the resolver refuses a longer one, naming
the argument); another list is as long as LIST_SIZES expects (a list of scalars costs a point per
LEAVES_PER_POINT of its items). Some fields cost more than the objects they return (FIELD_COSTS):
a schedule costs by the length of its window (it cuts every segment of the cluster's timeline), a
preview runs the estimator, a registration parses and seals a kubeconfig. What such a field
returns is paid by that cost, so the types under it (FLAT_TYPES) add nothing. Introspection costs
INTROSPECTION, whatever it selects.

The cost is an upper bound from the document alone (a list may turn out shorter), so a client can
work it out too; `extensions.cost` of every response says what was charged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
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

from domain.services import audit, benchmarks, deployments, jobs, spend

BASE = 10
INTROSPECTION = 50
TEXT_BYTES_PER_POINT = 1024
LEAVES_PER_POINT = 50
UNRULED_LIST_SIZE = 100
"""A list without a rule (the schema test refuses one) is priced as a long page."""

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


def _forecast(arguments: Arguments) -> float:
    """A cost forecast walks the schedule's segments once per hour it forecasts; hours it will
    refuse cost the default (24)."""
    hours = arguments.get("hours", 24)
    if not isinstance(hours, int) or isinstance(hours, bool) or not 1 <= hours <= 336:
        hours = 24
    return 20 + hours / 4


FLEET_MEMBERS = 4
"""A submission, deployment or preview on a fleet runs an estimate on each member: priced for
a fleet of this many (the fleets MultiKueue's own tests and the issue's example have are three
or four), since the document does not say how many the fleet has."""


def _members(arguments: Arguments) -> int:
    """How many estimates a field given `input` with or without a `fleetId` runs."""
    given = arguments.get("input")
    return FLEET_MEMBERS if isinstance(given, dict) and given.get("fleetId") else 1


FIELD_COSTS: dict[str, Callable[[Arguments], float]] = {
    "Cluster.schedule": _schedule,
    "Subscription.scheduleTimeline": _schedule,
    "Query.previewJob": lambda a: 100 * _members(a),
    "Mutation.submitJob": lambda a: 1 if _members(a) == 1 else 100 * _members(a),
    "Mutation.deployModel": lambda a: 1 if _members(a) == 1 else 100 * _members(a),
    "Cluster.estimateAccuracy": lambda _: 20,
    "Cluster.costForecast": _forecast,
    "Budget.projectedExhaustion": lambda _: 25,  # its scope's segments forecast on each cluster
    "Cluster.health": lambda _: 2,
    "Job.kueuePosition": lambda _: 5,
    "Mutation.registerCluster": lambda _: 50,
    "Mutation.updateCluster": lambda _: 50,
    "Mutation.refreshCluster": lambda _: 20,
    "Mutation.installAddons": lambda _: 20,  # the mirror's name is resolved
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
        "CostForecast",
        "CostHour",
        "ProjectCost",
        "BudgetExhaustion",
    }
)
"""Types whose fields are paid for by the field that returned them."""


@dataclass(frozen=True)
class Page:
    """A list as long as its `argument` asks (or that argument's default), at most `maximum`."""

    maximum: int
    argument: str = "first"


SAMPLES_PAGE = 1000
"""The most samples one `Benchmark.samples` page holds."""

PAGES: dict[str, Page] = {
    "Query.jobs": Page(jobs.MAX_PAGE),
    "Query.auditEvents": Page(audit.MAX_PAGE),
    "Query.deployments": Page(deployments.MAX_PAGE),
    "Query.benchmarks": Page(benchmarks.MAX_PAGE),
    "Benchmark.samples": Page(SAMPLES_PAGE),
    "Query.spend": Page(spend.MAX_PAGE),
    "Fleet.queue": Page(1000),
}
"""Pages: connections and lists with a size argument, by `Type.field`."""

LIST_SIZES: dict[str, int] = {
    # a connection's edges: its page multiplies already
    "AuditEventConnection.edges": 1,
    "BenchmarkConnection.edges": 1,
    "DeploymentConnection.edges": 1,
    "JobConnection.edges": 1,
    "SpendConnection.edges": 1,
    # lists of objects, by how long they are expected to be
    "Query.clusters": 10,
    "Query.jobEvents": 50,
    "Query.workloadPriorityClasses": 5,
    "Query.budgets": 10,
    "Query.fleets": 5,
    "Query.drains": 3,
    "Query.scalingSteps": 20,
    "Query.secrets": 10,
    "Secret.keys": 3,
    "Job.secrets": 1,
    "Deployment.secrets": 1,
    "Deployment.scalingSteps": 20,
    "JobLogs.lines": 200,
    "JobLogs.pods": 4,
    "Drain.blockedPods": 3,
    "Fleet.members": 4,
    "Job.moves": 2,
    "JobPreview.members": FLEET_MEMBERS,
    "FleetMemberPreview.problems": 3,
    "FleetMemberPreview.warnings": 3,
    "Cluster.nodes": 50,
    "Cluster.capacity": 5,
    "Cluster.gpuPrices": 5,
    "Cluster.resourceFlavors": 5,
    "Cluster.clusterQueues": 10,
    "Cluster.cohorts": 5,
    "Cluster.localQueues": 20,
    "Cluster.reservations": 10,
    "Cluster.addons": 3,
    "ClusterQueue.resourceGroups": 3,
    "Cohort.resourceGroups": 1,  # most cohorts hold no quota of their own
    "ClusterQueue.usage": 10,
    "ResourceGroup.flavors": 5,
    "FlavorQuotas.resources": 4,
    "ResourceFlavor.nodeLabels": 5,
    "Node.taints": 3,
    "Node.conditions": 5,
    "Node.allocatable": 6,
    "Node.capacity": 6,
    "Job.placements": 8,
    "Resources.podSets": 2,
    "Job.events": 20,
    "JobSnapshot.jobs": 200,
    "ClusterSnapshot.nodes": 50,
    "ClusterChange.nodes": 50,
    "Deployment.workers": 8,
    "Deployment.replicaJobs": 4,
    "Deployment.warnings": 1,
    "DeploymentSnapshot.deployments": 50,
    "Benchmark.configuration": 15,
    "BenchmarkResult.failures": 5,
    "BenchmarkComparison.benchmarks": benchmarks.MAX_COMPARED,
    "BenchmarkComparison.differences": 10,
    "BenchmarkComparison.best": 10,
    "ValidationError.fields": 5,
    # lists of scalars (LEAVES_PER_POINT of them to a point)
    "AuditEvent.targets": 5,
    "ConfigurationDifference.values": benchmarks.MAX_COMPARED,
    "Deployment.endpoints": 2,
    "EngineArgs.extraArgs": 10,
    "Estimate.warnings": 3,
    "Job.dependsOn": 5,
    "Placement.gpuIndices": 8,
    "RequestSample.itlMs": 128,
    "ResourceGroup.coveredResources": 4,
    "Worker.devices": 8,
}
"""Lists that are no page, by `Type.field`: how many items they are expected to hold."""


def text_cost(text: str | None) -> int:
    """What parsing a document's text costs: a point per KiB."""
    return len(text or "") // TEXT_BYTES_PER_POINT


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
        if parent.name in FLAT_TYPES:
            return 0.0
        arguments = self.arguments(node)
        if key in PAGES:
            size = _page_size(PAGES[key], field, arguments)
        elif is_list:
            size = float(LIST_SIZES.get(key, UNRULED_LIST_SIZE))
        else:
            size = 1.0
        if key in FIELD_COSTS:
            own = FIELD_COSTS[key](arguments)
            if node.selection_set is None or target.name in FLAT_TYPES:
                return own
        elif is_leaf_type(target):
            return size / LEAVES_PER_POINT if is_list else 0.0
        else:
            own = 0.0 if is_list else 1.0  # a list's items are its objects
        below = self.selection(target, node.selection_set, depth + 1) if node.selection_set else 0.0
        return own + size * (1.0 + below if is_list else below)


def _page_size(page: Page, field: GraphQLField, arguments: Arguments) -> float:
    """How long a page asks to be: its argument, else that argument's default; at most its
    maximum (a longer one is refused by its resolver, having cost the maximum)."""
    asked = arguments.get(page.argument)
    if not isinstance(asked, int) or isinstance(asked, bool):
        declared = field.args.get(page.argument)
        default = declared.default_value if declared is not None else None
        asked = default if isinstance(default, int) else page.maximum
    return float(min(max(asked, 0), page.maximum))


def operation_cost(
    schema: GraphQLSchema,
    operation: OperationDefinitionNode,
    fragments: Mapping[str, FragmentDefinitionNode],
    variables: Mapping[str, Any] | None,
    text: str | None = None,
) -> int:
    """The operation's cost; its document's `text`, when given, is charged too. Walks the
    fragments out: only for a document within the bounds of schema/bounds.py."""
    root = schema.get_root_type(operation.operation)
    if root is None:
        return BASE + text_cost(text)
    costing = _Costing(schema, fragments, variables or {})
    return BASE + text_cost(text) + round(costing.selection(root, operation.selection_set, 0))
