"""The garbage collector of a long-running process (budcluster/collector.py): what lives when it
is installed, and what survives each full collection after, is frozen out of the next ones; a
frozen object is still freed by reference counting; a reference cycle among frozen objects waits
for the thaw, whose full collection frees it, and what survives that is frozen again; the thaw
comes sooner once the frozen objects grew by a share since the last one.
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from budcluster.collector import FrozenSurvivors


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Iterator[Clock]:
    yield Clock()


@pytest.fixture
def survivors(clock: Clock) -> Iterator[FrozenSurvivors]:
    policy = FrozenSurvivors(thaw_seconds=600, clock=clock)
    policy.install()
    try:
        yield policy
    finally:
        policy.uninstall()


def cycle() -> weakref.ref[Node]:
    a, b = Node(), Node()
    a.other, b.other = b, a
    return weakref.ref(a)


def test_survivors_are_frozen_and_a_cycle_among_them_waits_for_the_thaw(
    survivors: FrozenSurvivors, clock: Clock
) -> None:
    assert gc.get_freeze_count() > 0
    held = [Node() for _ in range(1000)]
    gc.collect()  # a full collection: they survive it, and are frozen
    assert all(gc.is_tracked(n) for n in held) and gc.get_freeze_count() >= len(held)

    kept = [Node()]
    freed = weakref.ref(kept[0])
    gc.collect()
    kept.clear()  # reference counting frees a frozen object at once
    assert freed() is None

    orphan = cycle()
    gc.collect()  # the cycle is young and unreachable: collected now
    assert orphan() is None
    survivor = cycle()
    holder = [survivor()]
    gc.collect()  # it survives (held), and is frozen
    holder.clear()  # now unreachable, but frozen: full collections do not see it
    gc.collect()
    assert survivor() is not None

    clock.now = 601
    gc.collect()  # the first after the thaw's time: gives every frozen object back
    assert gc.get_freeze_count() == 0
    gc.collect()  # a collection of everything, which frees the old cycle
    assert survivor() is None
    assert gc.get_freeze_count() > 0  # and what survived it is frozen again


def test_the_thaw_comes_sooner_once_the_frozen_objects_grew_by_a_share(clock: Clock) -> None:
    policy = FrozenSurvivors(thaw_seconds=600, thaw_growth=0.05, clock=clock)
    policy.install()
    try:
        baseline = gc.get_freeze_count()
        survivor = cycle()
        holder = [survivor()]
        gc.collect()
        holder.clear()  # an unreachable cycle, frozen: it waits for a thaw
        gc.collect()
        assert survivor() is not None and gc.get_freeze_count() > 0
        grown = [Node() for _ in range(baseline // 10 + 1)]  # 10 % more, no time passed
        gc.collect()  # frozen, past the share: the frozen objects are given back
        assert gc.get_freeze_count() == 0
        gc.collect()  # a collection of everything, which frees the old cycle
        assert survivor() is None
        assert gc.get_freeze_count() >= len(grown)  # what survived is frozen again
    finally:
        policy.uninstall()
