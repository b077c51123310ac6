"""Lanes: the waiting demands of one queue and GPU type, in admission order.

Admitted demands are only marked removed (and compacted away in bulk), so scanning a lane costs
what is looked at, not the lane's length. A lane remembers the smallest request refused since
resources of its kind last came free (`limit`): nothing that large can fit until then, so a cycle
jumps straight to the next smaller request (an index of positions per request size) and leaves
the lane once none is left.
"""

from __future__ import annotations

import bisect
from collections import defaultdict

from domain.scheduling.demand import Demand


class Lane:
    def __init__(self) -> None:
        self.items: list[Demand] = []
        self._keys: set[str] = set()
        self.removed: set[str] = set()
        """Keys of items no longer waiting; always a subset of the items' keys."""
        self._positions: dict[int, list[int]] | None = None
        self._heads: dict[int, int] = {}
        self.limit: int | None = None
        self.limit_reason = ""
        self.limit_epoch: tuple[int, int] = (-1, -1)

    def __len__(self) -> int:
        return len(self.items) - len(self.removed)

    def add(self, demand: Demand) -> None:
        if demand.key in self._keys:
            self.compact()  # it was here before (admitted, then preempted): drop the old entry
            if demand.key in self._keys:
                self.items = [d for d in self.items if d.key != demand.key]
                self._keys.discard(demand.key)
        bisect.insort(self.items, demand, key=lambda d: d.order)
        self._keys.add(demand.key)
        self._positions = None

    def remove(self, key: str) -> None:
        """Mark `key` as no longer waiting. Indices stay valid (a cycle holds some) until
        `tidy` compacts the lane, between cycles."""
        if key in self._keys:
            self.removed.add(key)

    def tidy(self) -> None:
        if len(self.removed) > 64 and len(self.removed) * 2 > len(self.items):
            self.compact()

    def compact(self) -> None:
        self.items = [d for d in self.items if d.key not in self.removed]
        self._keys = {d.key for d in self.items}
        self.removed.clear()
        self._positions = None

    def _index(self) -> dict[int, list[int]]:
        if self._positions is None:
            positions: dict[int, list[int]] = defaultdict(list)
            for index, demand in enumerate(self.items):
                positions[demand.gpu_count].append(index)
            self._positions = dict(positions)
            self._heads = dict.fromkeys(positions, 0)
        return self._positions

    def next_live(self, start: int, below: int | None = None) -> int | None:
        """The first live demand at or after `start`, asking fewer than `below` GPUs if given."""
        if below is None:
            items, removed = self.items, self.removed
            for index in range(start, len(items)):
                if items[index].key not in removed:
                    return index
            return None
        best: int | None = None
        items, removed = self.items, self.removed
        for size, positions in self._index().items():
            if size >= below:
                continue
            head = self._heads[size]
            while head < len(positions) and items[positions[head]].key in removed:
                head += 1
            self._heads[size] = head
            at = max(head, bisect.bisect_left(positions, start)) if start else head
            while at < len(positions) and items[positions[at]].key in removed:
                at += 1
            if at < len(positions) and (best is None or positions[at] < best):
                best = positions[at]
        return best

    def smallest_from(self, index: int) -> int:
        """The smallest request among live demands from `index` on (1 << 30 if none)."""
        items, removed = self.items, self.removed
        smallest = 1 << 30
        for size, positions in self._index().items():
            if size >= smallest:
                continue
            at = max(self._heads[size], bisect.bisect_left(positions, index))
            while at < len(positions) and items[positions[at]].key in removed:
                at += 1
            if at < len(positions):
                smallest = size
        return smallest

    def known_limit(self, epoch: tuple[int, int]) -> int | None:
        return self.limit if self.limit_epoch == epoch else None

    def refused(self, size: int, reason: str, epoch: tuple[int, int]) -> None:
        if self.limit_epoch != epoch or self.limit is None or size < self.limit:
            self.limit, self.limit_reason, self.limit_epoch = size, reason, epoch
