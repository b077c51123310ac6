"""Fair sharing's dominant resource share (domain/scheduling/shares.py), against values worked
out by hand from Kueue's definition (pkg/cache/scheduler/fair_sharing.go): what a queue uses
beyond its nominal quota, per 1000 of what its cohort lends, its largest over resources,
divided by its weight; a zero weight that borrows above every other share."""

from __future__ import annotations

from dataclasses import replace

import pytest

from domain.model.quota import CPU, NVIDIA_GPU
from domain.scheduling.quota_ledger import QuotaLedger
from domain.scheduling.shares import Share, Shares
from tests.support.admission_tables import A100, Scenario, q


def shares(*, b_weight: float = 1.0, b_lend: float | None = None) -> Shares:
    scenario = Scenario(
        "cohort",
        [("n1", A100, 64)],
        [q("a", 8, cohort="co"), replace(q("b", 8, cohort="co", lend=b_lend), weight=b_weight)],
    )
    quotas = replace(scenario.quota_set(), fair_sharing=True)
    return Shares(quotas, QuotaLedger(quotas))


def test_a_queue_within_its_nominal_quota_has_no_share() -> None:
    s = shares()
    s.ledger.charge("a", A100, NVIDIA_GPU, 8)
    assert s.of("a") == Share(0.0, 1.0)
    assert not s.of("a").borrowing


def test_the_share_is_what_is_borrowed_per_1000_lendable() -> None:
    s = shares()
    s.ledger.charge("a", A100, NVIDIA_GPU, 12)  # 4 beyond 8; the cohort lends 8 + 8
    share = s.of("a")
    assert share.ratio == pytest.approx(4 * 1000 / 16)
    assert share.borrowed == {(A100, NVIDIA_GPU)}
    assert share.key == pytest.approx((False, 250.0))


def test_extra_usage_is_counted_without_charging() -> None:
    s = shares()
    assert s.of("a", {(A100, NVIDIA_GPU): 10}).ratio == pytest.approx(2 * 1000 / 16)
    assert s.ledger.usage[("a", A100, NVIDIA_GPU)] == 0


def test_only_what_members_lend_is_lendable() -> None:
    s = shares(b_lend=4)  # b keeps 4 of its 8
    s.ledger.charge("a", A100, NVIDIA_GPU, 10)
    assert s.of("a").ratio == pytest.approx(2 * 1000 / 12)


def test_the_dominant_resource_decides() -> None:
    s = shares()
    s.ledger.charge("a", A100, NVIDIA_GPU, 9)  # 1 GPU beyond: 1000/16 = 62.5
    s.ledger.charge("a", "default-cpu", CPU, 10_000 + 5_000)  # half the cohort's 20,000 cores
    assert s.of("a").ratio == pytest.approx(5_000 * 1000 / 20_000)


def test_weight_divides_the_share_and_zero_weight_borrows_above_all() -> None:
    s = shares(b_weight=2)
    s.ledger.charge("b", A100, NVIDIA_GPU, 12)
    assert s.of("b").key == pytest.approx((False, 125.0))
    zero = shares(b_weight=0)
    zero.ledger.charge("b", A100, NVIDIA_GPU, 9)
    zero.ledger.charge("a", A100, NVIDIA_GPU, 16)
    assert zero.of("b").key > zero.of("a").key
    assert zero.of("b").key == pytest.approx((True, 1000 / 16))


def test_a_queue_without_a_cohort_never_has_a_share() -> None:
    scenario = Scenario("alone", [("n1", A100, 8)], [q("solo", 4)])
    quotas = scenario.quota_set()
    s = Shares(quotas, QuotaLedger(quotas))
    s.ledger.charge("solo", A100, NVIDIA_GPU, 4)
    assert s.of("solo", {(A100, NVIDIA_GPU): 4}) == Share(0.0, 1.0)
