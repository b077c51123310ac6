"""Metering: a run's cost is its GPUs (cores without GPUs) times the seconds it ran times the
price in force at each moment; a price change applies from its moment on; the unit of work's
`meter` adds each ended run to the job's actual cost and says it on the change that ended it."""

from __future__ import annotations

import uuid
from datetime import timedelta
from decimal import Decimal

import pytest

from domain.model.cluster import GpuPrice
from domain.model.ids import ClusterId
from domain.model.job import Job, JobStatus, Placement, PodSet, Resources, usage_ended
from domain.model.timeline import Row, Segment, SegmentKind
from domain.scheduling.cost import LIST_PRICES, PriceBook, cost_so_far, forecast_spend, meter
from tests.support.fakes import T0
from tests.unit.test_job_model import new_job

A100 = "nvidia-a100-80gb"


def running(job: Job, *, at_minute: float = 0, placements: tuple[Placement, ...] = ()) -> Job:
    job.transition(JobStatus.QUEUED, "queued", T0)
    job.transition(JobStatus.ADMITTED, "admitted", T0, placements=placements)
    job.transition(JobStatus.RUNNING, "started", T0 + timedelta(minutes=at_minute))
    return job


def gpu_job(gpus: int = 2, **resources: object) -> Job:
    job = new_job()
    job.resources = Resources(A100, gpus, 8, 64, **resources)  # type: ignore[arg-type]
    return job


def price(cluster: ClusterId, hourly: str, minute: float, gpu_type: str = A100) -> GpuPrice:
    return GpuPrice(cluster, gpu_type, Decimal(hourly), T0 + timedelta(minutes=minute))


def test_a_completed_run_costs_its_gpus_times_its_seconds_at_the_price() -> None:
    job = running(gpu_job(2))
    job.transition(JobStatus.COMPLETED, "done", T0 + timedelta(minutes=30))
    [(usage, cost)] = meter(job, {job.cluster_id: PriceBook()})
    assert usage.gpus == 2 and usage.seconds == 1800 and usage.outcome is JobStatus.COMPLETED
    assert cost == LIST_PRICES[A100] * 2 / 2 == Decimal("2.5")
    assert job.actual_cost == cost
    ended = job.changes[-1]
    assert ended.metered == cost and ended.job.actual_cost == cost  # the event says it too


def test_a_price_change_applies_from_its_moment_and_leaves_the_past_as_it_was() -> None:
    job = running(gpu_job(1))
    job.transition(JobStatus.COMPLETED, "done", T0 + timedelta(minutes=60))
    cluster = job.cluster_id
    book = PriceBook({A100: "3.00"}, [price(cluster, "1.00", 20), price(cluster, "6.00", 50)])
    [(_, cost)] = meter(job, {cluster: book})
    # 20 min at 3.00 (the cluster's setting), 30 at 1.00, 10 at 6.00
    assert cost == Decimal("1.0000") + Decimal("0.5000") + Decimal("1.0000")
    later = PriceBook({A100: "3.00"}, [price(cluster, "9.00", 61)])  # set after the run ended
    assert later.charge(usage_ended(job.changes[-1]) or pytest.fail("no run")) == Decimal("3")


def test_preempted_and_failed_runs_count_and_add_up_over_attempts() -> None:
    job = running(gpu_job(4))
    job.transition(JobStatus.PREEMPTED, "preempted by a higher priority", T0 + timedelta(minutes=6))
    job.begin_retry(T0 + timedelta(minutes=6), T0 + timedelta(minutes=7), "retry")
    book = {job.cluster_id: PriceBook({A100: "1.00"})}
    [(first, first_cost)] = meter(job, book)
    job.changes.clear()
    job.transition(JobStatus.QUEUED, "queued", T0 + timedelta(minutes=7))
    job.transition(JobStatus.ADMITTED, "admitted", T0 + timedelta(minutes=8))
    job.transition(JobStatus.RUNNING, "started", T0 + timedelta(minutes=9))
    job.transition(JobStatus.FAILED, "exit code 1", T0 + timedelta(minutes=24))
    [(second, second_cost)] = meter(job, book)
    assert (first.attempt, first.outcome, first_cost) == (0, JobStatus.PREEMPTED, Decimal("0.4"))
    assert (second.attempt, second.outcome, second_cost) == (1, JobStatus.FAILED, Decimal("1"))
    assert job.actual_cost == Decimal("1.4")


def test_a_change_metered_once_is_not_metered_again() -> None:
    job = running(gpu_job(1))
    job.transition(JobStatus.CANCELLED, "cancelled", T0 + timedelta(hours=1))
    book = {job.cluster_id: PriceBook({A100: "2.00"})}
    assert len(meter(job, book)) == 1
    assert meter(job, book) == []  # a commit that failed after metering, tried again
    assert job.actual_cost == Decimal("2")


def test_a_gang_pays_for_every_pod_and_gpu_less_work_pays_per_core() -> None:
    pods = tuple(Placement(f"node-{i}", (0, 1, 2, 3), A100) for i in range(3))
    gang = running(gpu_job(4, pod_count=3), placements=pods)  # a pod set: 3 pods of 4 GPUs
    gang.transition(JobStatus.COMPLETED, "done", T0 + timedelta(hours=1))
    [(usage, cost)] = meter(gang, {gang.cluster_id: PriceBook({A100: "1.00"})})
    assert usage.gpus == 12 and cost == Decimal("12")

    cpu = new_job()
    cpu.resources = Resources(None, 0, 10, 16)
    running(cpu)
    cpu.transition(JobStatus.COMPLETED, "done", T0 + timedelta(hours=2))
    [(usage, cost)] = meter(cpu, {cpu.cluster_id: PriceBook()})
    assert usage.gpus == 0 and usage.gpu_type is None and cost == Decimal("0.8")  # 10 x 2 h x 0.04


def test_only_a_run_that_ran_is_metered() -> None:
    job = gpu_job(1)
    job.transition(JobStatus.QUEUED, "queued", T0)
    job.transition(JobStatus.ADMITTED, "admitted", T0)
    job.transition(JobStatus.CANCELLED, "cancelled before it started", T0 + timedelta(minutes=5))
    assert meter(job, {job.cluster_id: PriceBook()}) == []
    assert job.actual_cost is None


def test_cost_so_far_prices_the_run_under_way_up_to_now() -> None:
    job = running(gpu_job(2))
    cluster = job.cluster_id
    book = PriceBook({A100: "1.00"}, [price(cluster, "4.00", 30)])
    # 2 GPUs: 30 min at 1.00, then 15 at 4.00
    assert cost_so_far(job, book, T0 + timedelta(minutes=45)) == Decimal("3")
    assert cost_so_far(job, book, T0 - timedelta(minutes=1)) == Decimal("0")
    job.transition(JobStatus.COMPLETED, "done", T0 + timedelta(minutes=60))
    meter(job, {cluster: book})
    assert cost_so_far(job, book, T0 + timedelta(days=1)) == job.actual_cost == Decimal("5")


def test_the_price_in_force_and_since_when() -> None:
    cluster = ClusterId(uuid.uuid4())
    book = PriceBook({"nvidia-l40s": 0.9}, [price(cluster, "2.00", 10)])
    shown = {p.gpu_type: p for p in book.now(["nvidia-l40s"], T0 + timedelta(minutes=11))}
    assert shown[A100].hourly == Decimal("2.00") and shown[A100].since == T0 + timedelta(minutes=10)
    assert shown["nvidia-l40s"].hourly == Decimal("0.9") and shown["nvidia-l40s"].since is None
    assert book.hourly(A100, T0) == LIST_PRICES[A100]  # before the change: the list price
    assert book.hourly("unheard-of-gpu", T0) == Decimal("2.00")


def test_every_pod_set_of_a_run_is_metered_whatever_the_cluster_reported_of_its_gpus() -> None:
    job = gpu_job(1)
    job.resources = Resources(A100, 1, 8, 64, pod_sets=(PodSet("workers", 2, 2, 8, 64),))
    running(job, placements=(Placement("n1", (0,), A100), Placement("n2"), Placement("n2")))
    job.transition(JobStatus.COMPLETED, "done", T0 + timedelta(hours=1))
    [(usage, cost)] = meter(job, {job.cluster_id: PriceBook({A100: "1.00"})})
    assert usage.gpus == 5 and cost == Decimal("5")  # 1 + 2 pods x 2: admitted all or nothing


def test_a_run_over_midnight_is_kept_a_piece_per_utc_day_and_the_pieces_add_up() -> None:
    job = running(gpu_job(3), at_minute=-13 * 60)  # from 23:00 the day before T0 (12:00)
    job.transition(JobStatus.COMPLETED, "done", T0 + timedelta(hours=13))  # 01:00 the day after
    cluster = job.cluster_id
    book = PriceBook({A100: "1.00"}, [price(cluster, "2.00", 0)])
    pieces = meter(job, {cluster: book})
    assert [(u.day.isoformat(), u.seconds / 3600) for u, _ in pieces] == [
        ("2025-12-31", 1.0),
        ("2026-01-01", 24.0),
        ("2026-01-02", 1.0),
    ]
    # 3 GPUs: 1 h at 1.00; 12 h at 1.00 then 12 at 2.00; 1 h at 2.00
    assert [c for _, c in pieces] == [Decimal("3"), Decimal("108"), Decimal("6")]
    whole = usage_ended(job.changes[-1])
    assert whole is not None and job.actual_cost == book.charge(whole) == Decimal("117")


def test_a_forecast_prices_each_hour_of_what_is_scheduled_with_the_windows_range() -> None:
    now = T0 + timedelta(minutes=30)  # 12:30: the first hour is 12:00-13:00
    rows = (
        Row("a0", "n1", 0, A100),
        Row("a1", "n1", 1, A100),
        Row("t0", "n2", 0, "nvidia-tesla-t4"),
    )

    def seg(sid: str, kind: SegmentKind, rows: tuple[str, ...], start: float, end: float | None,
            tenant: str = "t1", project: str = "p1", **window: float) -> Segment:  # fmt: skip
        return Segment(
            sid,
            rows,
            T0 + timedelta(hours=start),
            None if end is None else T0 + timedelta(hours=end),
            kind,
            "estimate",
            job_id=f"job-{sid}",
            tenant_id=tenant,
            project_id=project,
            **{k: T0 + timedelta(hours=v) for k, v in window.items()},  # type: ignore[arg-type]
        )

    segments = [
        seg("run", SegmentKind.RUNNING, ("a0", "a1"), -1, 2),  # 2 A100s: 5 an hour, to 14:00
        seg("wait", SegmentKind.ESTIMATED, ("t0",), 2, 4, project="p2",
            earliest_start=1, latest_start=3),  # a T4 (1 an hour) for 2 h from 14:00 (13-15)
        seg("theirs", SegmentKind.RUNNING, ("t0",), -1, 1, tenant="t2"),
        seg("done", SegmentKind.COMPLETED, ("a0",), -3, -1),
        seg("svc", SegmentKind.RUNNING, ("t0",), 0, None, project="p3"),  # until stopped
    ]  # fmt: skip
    prices = {A100: Decimal("2.5"), "nvidia-tesla-t4": Decimal("1")}
    mine = [s for s in segments if s.tenant_id == "t1"]
    found = forecast_spend(rows, mine, prices, now, 5)
    assert (found.start, found.end) == (T0, T0 + timedelta(hours=5))
    # hour by hour, 12:00 to 17:00: the running job (from now), the waiting one, the service
    assert [h.cost for h in found.hours] == [
        Decimal("2.50") + 0 + Decimal("0.50"),
        Decimal("5.00") + 0 + 1,
        0 + Decimal("1.00") + 1,
        0 + Decimal("1.00") + 1,
        Decimal("1.00"),
    ]
    # the waiting job may start from 13:00 (hours 2 and 3 of it) to 15:00 (hours 4 and 5)
    assert [h.low for h in found.hours] == [Decimal("3.00"), 6, 1, 1, 1]
    assert [h.high for h in found.hours] == [Decimal("3.00"), 7, 2, 2, 2]
    assert [(p.project_id, p.cost, p.low, p.high) for p in found.projects] == [
        ("p1", Decimal("7.50"), Decimal("7.50"), Decimal("7.50")),
        ("p2", Decimal("2.00"), Decimal("2.00"), Decimal("2.00")),  # the forecast holds it all
        ("p3", Decimal("4.50"), Decimal("4.50"), Decimal("4.50")),
    ]
