"""The autoscaling rule (`domain.model.autoscaling.decide`) and its checks, with no I/O:

- requests in flight: ceil(in flight / target), left alone within the 10 % tolerance, clamped
  to the bounds; requests held at zero replicas start min(1, minReplicas);
- queue time: scaled by queue / target above the target; below it, down to the replicas that
  hold what is in flight; an unknown queue time changes nothing;
- scaling down waits out the delay, then goes to the most asked for meanwhile; a look asking
  for as many or more ends the wait;
- to zero only with minReplicas 0, after scaleToZeroAfterSeconds since the last request or step,
  and never while a request is in flight;
- bounds, targets and delays out of range, and minReplicas 0 on Kubernetes, are refused with the
  field's path.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from domain.model.autoscaling import (
    Autoscaling,
    ScaleMetric,
    ScalingState,
    ServingLoad,
    autoscaling_issues,
    decide,
)
from domain.services.deployments import autoscaling_field_issues
from tests.support.fakes import T0

IN_FLIGHT = Autoscaling(
    1, 8, ScaleMetric.IN_FLIGHT, 4.0, scale_to_zero_after_seconds=300, scale_down_delay_seconds=60
)


def load(*in_flight: int, queue: float | None = 0.0, held: int = 0) -> ServingLoad:
    return ServingLoad(in_flight=in_flight, queue_seconds=queue, held=held)


def replicas(a: Autoscaling, current: int, seen: ServingLoad, *, now: datetime = T0) -> int:
    return decide(
        a, current, seen, slots=16, state=ScalingState(), quiet_since=T0, now=now
    ).replicas


@pytest.mark.parametrize(
    ("current", "in_flight", "wanted"),
    [
        (1, (4,), 1),  # at the target
        (2, (4, 5), 3),  # 4.5 per replica is 12.5 % off: ceil(9 / 4)
        (1, (12,), 3),
        (2, (20, 20), 8),  # ceil(40/4) = 10, clamped to 8
        (3, (1, 0, 0), 3),  # fewer wanted: waits out the delay first
    ],
)
def test_in_flight_follows_the_requests_within_the_bounds(
    current: int, in_flight: tuple[int, ...], wanted: int
) -> None:
    assert replicas(IN_FLIGHT, current, load(*in_flight)) == wanted


def test_within_the_tolerance_nothing_changes() -> None:
    # 4.2 per replica against 4: 5 % off
    assert replicas(IN_FLIGHT, 5, load(4, 4, 4, 5, 4)) == 5


def test_held_requests_start_at_least_one_replica_from_zero() -> None:
    a = Autoscaling(0, 4, ScaleMetric.IN_FLIGHT, 4.0)
    assert replicas(a, 0, load(held=1)) == 1
    assert replicas(a, 0, load()) == 0
    two = Autoscaling(2, 4, ScaleMetric.IN_FLIGHT, 4.0)
    assert replicas(two, 0, load(held=3)) == 2


def test_queue_time_scales_by_its_ratio_and_down_to_what_holds_the_requests() -> None:
    a = Autoscaling(1, 10, ScaleMetric.QUEUE_TIME, 2.0, scale_down_delay_seconds=0)
    assert replicas(a, 2, load(16, 16, queue=5.0)) == 5  # ceil(2 x 5 / 2)
    assert replicas(a, 2, load(16, 16, queue=2.1)) == 2  # within 10 %
    assert replicas(a, 4, load(10, 10, 0, 0, queue=0.0)) == 2  # 20 in flight, 16 slots each
    assert replicas(a, 4, load(10, 10, 0, 0, queue=None)) == 4  # not known: as it is


def test_scaling_down_waits_out_the_delay_and_takes_the_most_asked_for() -> None:
    a = IN_FLIGHT
    first = decide(a, 4, load(4, 4, 0, 0), slots=16, state=ScalingState(), quiet_since=T0, now=T0)
    assert first.replicas == 4 and first.state.lower_since == T0 and first.state.lower_peak == 2
    later = T0 + timedelta(seconds=30)
    second = decide(a, 4, load(1, 0, 0, 0), slots=16, state=first.state, quiet_since=T0, now=later)
    assert second.replicas == 4 and second.state.lower_peak == 2
    done = T0 + timedelta(seconds=60)
    third = decide(a, 4, load(1, 0, 0, 0), slots=16, state=second.state, quiet_since=T0, now=done)
    assert third.replicas == 2 and third.state == ScalingState()  # the most asked for meanwhile
    again = decide(a, 4, load(8, 8, 0, 0), slots=16, state=second.state, quiet_since=T0, now=done)
    assert again.replicas == 4 and again.state == ScalingState()  # asked for as many: no wait


def test_to_zero_only_when_idle_long_enough_and_allowed() -> None:
    a = Autoscaling(0, 4, ScaleMetric.IN_FLIGHT, 4.0, scale_to_zero_after_seconds=300)
    at = T0 + timedelta(seconds=300)
    assert replicas(a, 1, load(0), now=at - timedelta(seconds=1)) == 1
    assert replicas(a, 1, load(0), now=at) == 0
    assert replicas(a, 1, load(1), now=at) == 1  # a request in flight
    recent = ServingLoad((0,), 0.0, last_request_at=T0 + timedelta(seconds=200))
    assert replicas(a, 1, recent, now=at) == 1  # the last request was 100 s ago
    assert replicas(IN_FLIGHT, 1, load(0), now=at) == 1  # minReplicas 1


def test_the_reason_says_the_metric() -> None:
    up = decide(IN_FLIGHT, 1, load(12), slots=16, state=ScalingState(), quiet_since=T0, now=T0)
    assert (up.replicas, up.metric_value) == (3, 12.0)
    assert up.reason == "12.0 requests in flight per replica, target 4"


@pytest.mark.parametrize(
    ("a", "path", "code"),
    [
        (Autoscaling(0, 0, ScaleMetric.IN_FLIGHT, 1.0), "max_replicas", "INVALID"),
        (Autoscaling(3, 2, ScaleMetric.IN_FLIGHT, 1.0), "max_replicas", "INVALID"),
        (Autoscaling(-1, 2, ScaleMetric.IN_FLIGHT, 1.0), "min_replicas", "INVALID"),
        (Autoscaling(0, 65, ScaleMetric.IN_FLIGHT, 1.0), "max_replicas", "INVALID"),
        (Autoscaling(0, 2, ScaleMetric.IN_FLIGHT, float("nan")), "target", "INVALID"),
        (Autoscaling(0, 2, ScaleMetric.IN_FLIGHT, float("inf")), "target", "INVALID"),
        (Autoscaling(0, 2, ScaleMetric.QUEUE_TIME, 3601.0), "target", "INVALID"),
        (
            Autoscaling(0, 2, ScaleMetric.IN_FLIGHT, 1.0, scale_down_delay_seconds=-1),
            "scale_down_delay_seconds",
            "INVALID",
        ),
    ],
)
def test_out_of_range_is_refused_by_field(a: Autoscaling, path: str, code: str) -> None:
    found = autoscaling_issues(a, real_cluster=False, max_replicas=64)
    assert (path, code) in [(p, c) for p, _, c in found]


def test_min_replicas_zero_is_refused_on_a_kubernetes_cluster() -> None:
    zero = Autoscaling(0, 2, ScaleMetric.IN_FLIGHT, 4.0)
    issues = autoscaling_field_issues(zero, real_cluster=True)
    assert [(i.field, i.code) for i in issues] == [("autoscaling.min_replicas", "UNSUPPORTED")]
    assert autoscaling_field_issues(zero, real_cluster=False) == []
    one = Autoscaling(1, 2, ScaleMetric.IN_FLIGHT, 4.0)
    assert autoscaling_field_issues(one, real_cluster=True) == []
