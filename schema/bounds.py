"""How large a document is, measured before graphql-core validates it.

graphql-core's validation is not linear in a document's size: OverlappingFieldsCanBeMerged
compares every pair of selections of one response name in a selection set (900 `id`s, 11 KB,
kept it busy for seconds), and Strawberry's depth and alias rules walk each fragment spread
anew (a chain of fragments each spreading the next twice doubles at every link). So a document
is measured first, in two passes. The first is linear in the text: each fragment is measured
once and its figures added wherever it is spread (a fragment that spreads itself is refused
here, as validation would). It counts the selections (fields, fragment spreads and inline
fragments) as if every fragment were written out, the aliases likewise, and the depth: the
level of the deepest field (root fields are at 0) apart from introspection's, and with it.
Only a document within those limits gets the second pass, which writes the fragments out (a
bounded amount of work by then) to find the most selections of one response name at one place
of the answer: in one selection set, with the fragments spread into it merged and with the
selection sets of the fields it shares a response name with, as graphql-core merges them (it
compares every pair of them, so its work grows with the square of that number). Every
definition counts, used or not: validation visits them all.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    InlineFragmentNode,
    OperationDefinitionNode,
    SelectionSetNode,
)

CAP = 1 << 40
"""Counts stop growing here (a chain of doublings must stay a small number)."""


@dataclass(frozen=True)
class Size:
    selections: int
    aliases: int
    depth: int
    """The level of the deepest field outside introspection (`__schema`, `__type`)."""
    introspection_depth: int
    """The level of the deepest field, introspection's included."""


@dataclass(frozen=True)
class Repeat:
    name: str
    times: int


class FragmentCycle(Exception):
    def __init__(self, name: str) -> None:
        super().__init__(f'Cannot spread fragment "{name}" within itself.')
        self.name = name


@dataclass(frozen=True)
class _Figures:
    selections: int = 0
    aliases: int = 0
    depth: int = -1
    full_depth: int = -1


class _Measure:
    def __init__(self, fragments: Mapping[str, FragmentDefinitionNode]) -> None:
        self.fragments = fragments
        self.done: dict[str, _Figures] = {}
        self.visiting: set[str] = set()

    def fragment(self, name: str) -> _Figures | None:
        found = self.done.get(name)
        if found is not None:
            return found
        definition = self.fragments.get(name)
        if definition is None:
            return None  # unknown: validation says so
        if name in self.visiting:
            raise FragmentCycle(name)
        self.visiting.add(name)
        figures = self.selection_set(definition.selection_set)
        self.visiting.discard(name)
        self.done[name] = figures
        return figures

    def selection_set(self, selection_set: SelectionSetNode) -> _Figures:
        selections = aliases = 0
        depth = full_depth = -1
        for node in selection_set.selections:
            selections += 1
            if isinstance(node, FieldNode):
                aliases += node.alias is not None
                below = self.selection_set(node.selection_set) if node.selection_set else None
                full_depth = max(full_depth, 1 + below.full_depth if below else 0)
                if below is None or node.name.value.startswith("__"):
                    depth = max(depth, 0)  # introspection's own depth is counted apart
                else:
                    depth = max(depth, 1 + below.depth)
            elif isinstance(node, InlineFragmentNode):
                below = self.selection_set(node.selection_set)
                depth, full_depth = max(depth, below.depth), max(full_depth, below.full_depth)
            elif isinstance(node, FragmentSpreadNode):
                below = self.fragment(node.name.value)
                if below is not None:
                    selections -= 1  # the spread counts as what it spreads
                    depth, full_depth = max(depth, below.depth), max(full_depth, below.full_depth)
            else:
                continue
            if below is not None:
                selections = min(CAP, selections + below.selections)
                aliases = min(CAP, aliases + below.aliases)
        return _Figures(selections, aliases, depth, full_depth)


def _definitions(
    document: DocumentNode,
) -> tuple[list[OperationDefinitionNode], dict[str, FragmentDefinitionNode]]:
    operations = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    fragments = {
        d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
    }
    return operations, fragments


def size(document: DocumentNode) -> Size:
    """The document's figures (linear in its text); raises FragmentCycle."""
    operations, fragments = _definitions(document)
    measure = _Measure(fragments)
    total = _Figures()
    roots = [o.selection_set for o in operations]
    for root in roots:
        total = _sum(total, measure.selection_set(root))
    reached = set(measure.done)
    for name in fragments:
        if name not in reached:  # not spread by any operation: validated on its own
            figures = measure.fragment(name)
            assert figures is not None
            total = _sum(total, figures)
            reached = set(measure.done)
    return Size(
        selections=total.selections,
        aliases=total.aliases,
        depth=max(total.depth, 0),
        introspection_depth=max(total.full_depth, 0),
    )


def _sum(a: _Figures, b: _Figures) -> _Figures:
    return _Figures(
        min(CAP, a.selections + b.selections),
        min(CAP, a.aliases + b.aliases),
        max(a.depth, b.depth),
        max(a.full_depth, b.full_depth),
    )


def most_repeated(document: DocumentNode) -> Repeat:
    """The response name selected most often at one place of the answer: in one selection set
    with the fragments spread into it merged, and with the selection sets of the fields it
    shares a response name with (graphql-core compares every pair of those). Writes the
    fragments out: only for a document `size` measured and found within bounds."""
    operations, fragments = _definitions(document)
    spread: set[str] = set()
    most = _most_repeated([[o.selection_set] for o in operations], fragments, spread)
    for name, definition in fragments.items():
        if name not in spread:  # not spread by any operation: validated on its own
            spread.add(name)
            again = _most_repeated([[definition.selection_set]], fragments, spread)
            most = again if again.times > most.times else most
    return most


def _most_repeated(
    pending: list[list[SelectionSetNode]],
    fragments: Mapping[str, FragmentDefinitionNode],
    spread: set[str],
) -> Repeat:
    """Each pending group is the selection sets merged at one place of the answer."""
    most = Repeat("", 0)
    while pending:
        below: dict[str, list[SelectionSetNode]] = {}
        names: Counter[str] = Counter()
        for selection_set in pending.pop():
            _merge(selection_set, fragments, names, below, spread)
        if names:
            name, times = names.most_common(1)[0]
            if times > most.times:
                most = Repeat(name, times)
        pending.extend(below.values())
    return most


def _merge(
    selection_set: SelectionSetNode,
    fragments: Mapping[str, FragmentDefinitionNode],
    names: Counter[str],
    below: dict[str, list[SelectionSetNode]],
    spread: set[str],
) -> None:
    """Counts the response names of one selection set, with its fragments merged in; the
    selection sets of its fields go to `below`, by response name."""
    for node in selection_set.selections:
        if isinstance(node, FieldNode):
            name = (node.alias or node.name).value
            names[name] += 1
            if node.selection_set is not None:
                below.setdefault(name, []).append(node.selection_set)
        elif isinstance(node, InlineFragmentNode):
            _merge(node.selection_set, fragments, names, below, spread)
        elif isinstance(node, FragmentSpreadNode):
            definition = fragments.get(node.name.value)
            if definition is not None:
                spread.add(node.name.value)
                _merge(definition.selection_set, fragments, names, below, spread)
