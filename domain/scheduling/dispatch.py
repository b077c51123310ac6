"""Where a fleet job goes: the member where it is estimated to start soonest, or, with a
deadline, the cheapest member that meets it at the start window's confidence; and when a waiting
job should move to another member.

Every member's offer is an estimate of the same admission rules the cluster runs
(`domain.scheduling.estimator`), so the choice is as good as the estimates, and the fleet replay
(`benchmarks/fleet_replay.py`) measures it against Kueue's own MultiKueue dispatchers with this
very function. Ties on the start (to the second; every start already past is now) go to the
lower cost, then to the less loaded member, then to the member named first. (Ties broken first
by whether the start evicts running work (`Offer.evicts`, shown in previews) made the replay's
waits longer on two seeds of four and preempted about as often: not weighed; nor is the run a
start throws away: `benchmarks/fleet_replay.py` says what that did.) A move must gain at
least the fleet's threshold and more than the estimate where the job is can tell apart: the
other member must start it before the earliest of the start window its own member's record
gives that estimate (at `DISPATCH_CONFIDENCE`), or, while that record is too short for a
window, sooner by `MOVE_SHARE` of the wait left. Moves on differences the estimates cannot see
trade jobs back and forth, each move putting the job ahead of the younger work waiting where it
goes: on the fleet replay, a pass that moved on the threshold and a fifth of the wait alone
made the mean wait longer than no moves at all (the module docstring of
`benchmarks/fleet_replay.py` says by how much).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from domain.errors import FieldIssue
from domain.model.ids import ClusterId

DISPATCH_CONFIDENCE = 0.8
"""The start window a deadline is checked at: the one the schedule shows by default."""
MOVE_SHARE = 0.2
"""Without a start window, a move must gain this share of the wait left on the job's member (a
choice, not a fit: a window's width is a multiple of the wait, so an estimate's error grows with
the wait, and a fifth is a low bound of it where no record says more)."""


@dataclass(frozen=True)
class Offer:
    """What one member offers a job: when it would start and end there, its cost, how loaded
    the member is, or why the member cannot take it (`refused`)."""

    cluster_id: ClusterId
    name: str
    start: datetime | None = None
    """None: no start within the estimator's horizon (never fits, a hold, a drained member)."""
    end: datetime | None = None
    window: tuple[datetime, datetime | None] | None = None
    """The start window at DISPATCH_CONFIDENCE (earliest, latest or None: no later bound);
    None while the member's record is too short to say one."""
    cost: Decimal | None = None
    load: float = 0.0
    """The share of the member's GPUs of the job's type that its active jobs hold or ask."""
    evicts: int = 0
    """Jobs the estimate has its start there preempt (shown; not weighed: module docstring)."""
    reason: str = ""
    warnings: tuple[str, ...] = ()
    refused: tuple[FieldIssue, ...] = ()

    @property
    def takes(self) -> bool:
        return not self.refused

    def ends_by(self, deadline: datetime) -> bool:
        """Whether the job ends by `deadline` here, its start at the window's latest."""
        if self.start is None or self.end is None or "MISSES_DEADLINE" in self.warnings:
            return False
        latest = self.start if self.window is None else self.window[1]
        return latest is not None and latest + (self.end - self.start) <= deadline


def _start_key(offer: Offer, now: datetime) -> tuple[bool, float]:
    if offer.start is None:
        return True, 0.0
    return False, float(round(max(0.0, (offer.start - now).total_seconds())))


def rank(
    offers: Sequence[Offer], now: datetime, *, deadline: datetime | None = None
) -> list[Offer]:
    """The members that can take the job, best first (see the module's docstring)."""
    order = {o.cluster_id: i for i, o in enumerate(offers)}

    def soonest(o: Offer) -> tuple[object, ...]:
        cost = (o.cost is None, o.cost if o.cost is not None else Decimal(0))
        return (*_start_key(o, now), *cost, o.load, order[o.cluster_id])

    ranked = sorted((o for o in offers if o.takes), key=soonest)
    if deadline is None:
        return ranked
    meeting = [o for o in ranked if o.ends_by(deadline)]
    cheapest = sorted(meeting, key=lambda o: (o.cost is None, o.cost or Decimal(0), soonest(o)))
    return cheapest + [o for o in ranked if not o.ends_by(deadline)]


def move_to(
    current: Offer,
    ranked: Sequence[Offer],
    now: datetime,
    *,
    threshold: timedelta,
    deadline: datetime | None = None,
) -> Offer | None:
    """The member a waiting job should move to from `current` (its own member's estimate, with
    its start window if the member's record gives one), or None to stay. With a deadline it
    moves only when it misses the deadline where it is and the best member meets it; else when
    the best starts it at least `threshold` sooner and before the earliest of `current`'s
    window (without one: `MOVE_SHARE` of the wait left sooner), or where it is nothing starts
    it at all."""
    best = next((o for o in ranked if o.cluster_id != current.cluster_id), None)
    if best is None or best.start is None:
        return None
    if deadline is not None and current.ends_by(deadline):
        return None
    if deadline is not None and best.ends_by(deadline):
        return best
    if current.start is None:
        return best
    gain = (current.start - best.start).total_seconds()
    if gain < threshold.total_seconds():
        return None
    if current.window is not None:
        return best if best.start < current.window[0] else None
    wait = max(0.0, (current.start - now).total_seconds())
    return best if gain >= MOVE_SHARE * wait else None
