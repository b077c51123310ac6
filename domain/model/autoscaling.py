"""Deployments that scale themselves: the bounds and target a user sets, the load an endpoint
reports, and the rule that turns one into a replica count.

The rule is the Horizontal Pod Autoscaler's (Kubernetes' `pkg/controller/podautoscaler`):
desired = ceil(current x metric / target), left alone within a tolerance of 10 % (HPA's default
`--horizontal-pod-autoscaler-tolerance`), clamped to [minReplicas, maxReplicas]; scaling up is at
once, scaling down only after every recommendation for `scale_down_delay_seconds` asked for
fewer (HPA's downscale stabilization window, 300 s by default), and to the most of them. For
requests in flight the count follows the requests (ceil(in flight / target), as Knative's
concurrency target does). Down to zero is apart: after `scale_to_zero_after_seconds` with no
request (KEDA's `cooldownPeriod`, 300 s by default); back from zero on the first request, which
the endpoint holds until a replica serves.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from datetime import datetime, timedelta

TOLERANCE = 0.1
"""HPA's default tolerance: a metric within 10 % of its target changes nothing."""
DEFAULT_SCALE_DOWN_DELAY_SECONDS = 300
"""HPA's default downscale stabilization window."""
DEFAULT_SCALE_TO_ZERO_AFTER_SECONDS = 300
"""KEDA's default cooldownPeriod (seconds without a request before a scaled object goes to 0)."""
MAX_STEPS = 20
"""Scaling steps a deployment keeps (newest first); older ones are in the event log."""
MAX_DELAY_SECONDS = 86_400


class ScaleMetric(enum.StrEnum):
    IN_FLIGHT = "IN_FLIGHT"
    """Requests in flight per replica (waiting for a slot, prefilling or decoding)."""
    QUEUE_TIME = "QUEUE_TIME"
    """Seconds a request waits for one of its replica's slots."""


@dataclass(frozen=True)
class Autoscaling:
    min_replicas: int
    max_replicas: int
    metric: ScaleMetric
    target: float
    scale_to_zero_after_seconds: int = DEFAULT_SCALE_TO_ZERO_AFTER_SECONDS
    """Without a request for this long, a deployment whose min_replicas is 0 goes to zero."""
    scale_down_delay_seconds: int = DEFAULT_SCALE_DOWN_DELAY_SECONDS


@dataclass(frozen=True)
class ServingLoad:
    """What an endpoint says of its load now."""

    in_flight: tuple[int, ...]
    """Per serving replica: requests waiting for a slot, prefilling or decoding."""
    queue_seconds: float | None
    """How long requests waited for a slot lately (None: not known)."""
    held: int = 0
    """Requests held because no replica serves (they wait for one to start)."""
    last_request_at: datetime | None = None
    """When the last request came (None: none came since this endpoint started)."""

    @property
    def total(self) -> int:
        return sum(self.in_flight) + self.held


@dataclass(frozen=True)
class ScalingStep:
    at: datetime
    from_replicas: int
    to_replicas: int
    reason: str
    metric_value: float | None = None
    """The metric that asked for it (requests in flight per replica, or queue seconds)."""


@dataclass(frozen=True)
class ScalingState:
    """What the rule remembers between two looks: since when it has asked for fewer replicas,
    and the most it asked for since."""

    lower_since: datetime | None = None
    lower_peak: int = 0


@dataclass(frozen=True)
class Decision:
    replicas: int
    reason: str
    metric_value: float | None
    state: ScalingState


def autoscaling_issues(
    a: Autoscaling, *, real_cluster: bool, max_replicas: int
) -> list[tuple[str, str, str]]:
    """(path under `autoscaling`, message, code) for what is wrong with `a`."""
    issues: list[tuple[str, str, str]] = []
    if not 0 <= a.min_replicas <= max_replicas:
        issues.append(("min_replicas", f"must be between 0 and {max_replicas}", "INVALID"))
    if not 1 <= a.max_replicas <= max_replicas:
        issues.append(("max_replicas", f"must be between 1 and {max_replicas}", "INVALID"))
    elif a.min_replicas > a.max_replicas:
        issues.append(("max_replicas", "must be at least `autoscaling.min_replicas`", "INVALID"))
    if real_cluster and a.min_replicas == 0:
        issues.append(
            (
                "min_replicas",
                "must be at least 1 on a Kubernetes cluster: scaling from zero needs a request "
                "path budcluster owns, which it has only on simulated clusters",
                "UNSUPPORTED",
            )
        )
    if not (math.isfinite(a.target) and a.target > 0):
        issues.append(("target", "must be a number greater than 0", "INVALID"))
    elif a.metric is ScaleMetric.IN_FLIGHT and a.target > 100_000:
        issues.append(("target", "must be at most 100000 requests per replica", "INVALID"))
    elif a.metric is ScaleMetric.QUEUE_TIME and a.target > 3600:
        issues.append(("target", "must be at most 3600 seconds", "INVALID"))
    for name, value in (
        ("scale_to_zero_after_seconds", a.scale_to_zero_after_seconds),
        ("scale_down_delay_seconds", a.scale_down_delay_seconds),
    ):
        if not 0 <= value <= MAX_DELAY_SECONDS:
            issues.append((name, f"must be between 0 and {MAX_DELAY_SECONDS} seconds", "INVALID"))
    return issues


def decide(
    a: Autoscaling,
    current: int,
    load: ServingLoad,
    *,
    slots: int,
    state: ScalingState,
    quiet_since: datetime,
    now: datetime,
) -> Decision:
    """The replicas `a` wants now, with `current` wanted before, `load` as the endpoint says and
    `slots` requests per replica at once. `quiet_since`: when the deployment last had a request
    or last scaled, whichever is later (its idle time counts from there)."""
    if current == 0:
        if load.held > 0:
            wanted = max(1, a.min_replicas)
            return Decision(wanted, "a request came while no replica served", None, ScalingState())
        return Decision(max(0, a.min_replicas), "idle", None, ScalingState())
    wanted, metric = _recommend(a, current, load, slots)
    last = load.last_request_at
    idle_from = max(quiet_since, last) if last else quiet_since
    if (
        a.min_replicas == 0
        and load.total == 0
        and now - idle_from >= timedelta(seconds=a.scale_to_zero_after_seconds)
    ):
        seconds = int((now - idle_from).total_seconds())
        return Decision(0, f"no request for {seconds} s", metric, ScalingState())
    wanted = min(a.max_replicas, max(a.min_replicas, 1, wanted))
    if wanted >= current:
        reason = _why(a, metric, wanted > current)
        return Decision(wanted, reason, metric, ScalingState())
    since = state.lower_since or now
    peak = max(state.lower_peak, wanted) if state.lower_since else wanted
    if now - since < timedelta(seconds=a.scale_down_delay_seconds):
        waiting = ScalingState(since, peak)
        return Decision(current, "waiting out the scale-down delay", metric, waiting)
    return Decision(peak, _why(a, metric, False), metric, ScalingState())


def _recommend(a: Autoscaling, current: int, load: ServingLoad, slots: int) -> tuple[int, float]:
    total = load.total
    if a.metric is ScaleMetric.IN_FLIGHT:
        per_replica = total / current
        if abs(per_replica / a.target - 1) <= TOLERANCE:
            return current, per_replica
        return math.ceil(total / a.target), per_replica
    queue = load.queue_seconds
    if queue is None:
        return current, 0.0
    if queue > a.target * (1 + TOLERANCE):
        return math.ceil(current * queue / a.target), queue
    # nobody waits longer than the target: as few replicas as hold what is in flight
    return min(current, max(1, math.ceil(total / slots))), queue


def _why(a: Autoscaling, metric: float, up: bool) -> str:
    if a.metric is ScaleMetric.IN_FLIGHT:
        return f"{metric:.1f} requests in flight per replica, target {a.target:g}"
    more = "above" if up else "within"
    return f"queue time {metric:.2f} s, {more} target {a.target:g} s"
