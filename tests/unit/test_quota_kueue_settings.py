"""Kueue's settings in the quota model, with fakes: what the quota service accepts and refuses.

Covers, as tables: a ClusterQueue's preemption (borrowWithinCohort only with reclaimWithinCohort,
Kueue's CEL rule; an int32 threshold), its flavor fungibility (a preference only with
whenCanBorrow and whenCanPreempt both TryNextFlavor, Kueue's CEL rule), its fair-sharing weight (0, or above 1e-9; finite; at most
1e9); a Cohort's rules (name, description, parent name, no cycle through its ancestors, limits only
under a parent, a lending limit above nominal allowed, flavors that exist, weight), each naming
its field. Also: a cohort is created and updated whole, its parent may be implicit (the model
keeps the name, `QuotaSet.cohort` finds no Cohort); a parent cohort may go while its children
stay; a flavor a cohort's quota names stays; the cluster's fair-sharing switch is stored and read
back through the quota set; nothing is stored when a command is refused.
"""

from __future__ import annotations

import math
import uuid
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from domain.errors import Conflict, NotFound, ValidationFailed
from domain.model.ids import ClusterId
from domain.model.quota import (
    NVIDIA_GPU,
    BorrowWithinCohort,
    BorrowWithinCohortPolicy,
    FlavorFungibility,
    FungibilityPolicy,
    FungibilityPreference,
    PreemptionPolicy,
    QuotaSettings,
    ReclaimWithinCohort,
    ResourceQuota,
    WithinClusterQueue,
)
from domain.ports.unit_of_work import TenantScope
from domain.services.quota_rules import CohortSpec
from tests.unit.test_quota_service import (
    CLUSTER,
    OPERATOR,
    World,
    gpu_group,
    issues,
    spec,
)

LOWER = BorrowWithinCohortPolicy.LOWER_PRIORITY
TRY, STOP = FungibilityPolicy.TRY_NEXT_FLAVOR, FungibilityPolicy.MAY_STOP_SEARCH
PREEMPT_FIRST = FungibilityPreference.PREEMPTION_OVER_BORROWING
R0 = "resource_groups.0.flavors.0.resources.0"


def preemption(reclaim: ReclaimWithinCohort, borrow: BorrowWithinCohort) -> PreemptionPolicy:
    return PreemptionPolicy(WithinClusterQueue.NEVER, reclaim, borrow)


@pytest.fixture
async def world() -> World:
    w = World()
    await w.service.create_cohort(OPERATOR, CohortSpec(CLUSTER, "lab"))
    return w


QUEUE_CASES: list[tuple[str, dict[str, Any], set[tuple[str, str]]]] = [
    ("borrowing preemption without reclaim",
     {"preemption": preemption(ReclaimWithinCohort.NEVER, BorrowWithinCohort(LOWER))},
     {("preemption.borrow_within_cohort.policy", "NEEDS_RECLAIM")}),
    ("threshold above int32",
     {"preemption": preemption(ReclaimWithinCohort.ANY, BorrowWithinCohort(LOWER, 2**31))},
     {("preemption.borrow_within_cohort.max_priority_threshold", "INVALID")}),
    ("threshold below int32",
     {"preemption": preemption(ReclaimWithinCohort.ANY, BorrowWithinCohort(LOWER, -(2**31) - 1))},
     {("preemption.borrow_within_cohort.max_priority_threshold", "INVALID")}),
    ("preference with whenCanBorrow MayStopSearch",
     {"flavor_fungibility": FlavorFungibility(STOP, TRY, PREEMPT_FIRST)},
     {("flavor_fungibility.preference", "NEEDS_TRY_NEXT_FLAVOR")}),
    ("preference with whenCanPreempt MayStopSearch",
     {"flavor_fungibility": FlavorFungibility(TRY, STOP, PREEMPT_FIRST)},
     {("flavor_fungibility.preference", "NEEDS_TRY_NEXT_FLAVOR")}),
    ("default preference with both MayStopSearch",
     {"flavor_fungibility": FlavorFungibility(
         STOP, STOP, FungibilityPreference.BORROWING_OVER_PREEMPTION)},
     {("flavor_fungibility.preference", "NEEDS_TRY_NEXT_FLAVOR")}),
    ("negative weight", {"fair_sharing_weight": -1.0}, {("fair_sharing_weight", "INVALID")}),
    ("nan weight", {"fair_sharing_weight": math.nan}, {("fair_sharing_weight", "INVALID")}),
    ("weight that collapses to 0", {"fair_sharing_weight": 1e-9},
     {("fair_sharing_weight", "TOO_SMALL")}),
    ("huge weight", {"fair_sharing_weight": 2e9}, {("fair_sharing_weight", "TOO_LARGE")}),
]  # fmt: skip


@pytest.mark.parametrize(("changes", "expected"), [c[1:] for c in QUEUE_CASES],
                         ids=[c[0] for c in QUEUE_CASES])  # fmt: skip
async def test_cluster_queue_settings_rules(
    world: World, changes: dict[str, Any], expected: set[tuple[str, str]]
) -> None:
    before = dict(world.q.cluster_queues)
    for command in (world.service.create_cluster_queue, world.service.update_cluster_queue):
        with pytest.raises(ValidationFailed) as caught:
            await command(OPERATOR, spec(**changes))
        assert issues(caught) == expected
    assert world.q.cluster_queues == before


@pytest.mark.parametrize(
    "changes",
    [
        {"preemption": preemption(ReclaimWithinCohort.LOWER_PRIORITY, BorrowWithinCohort(LOWER))},
        {"preemption": preemption(ReclaimWithinCohort.ANY, BorrowWithinCohort(LOWER, -(2**31)))},
        {
            "preemption": preemption(
                ReclaimWithinCohort.NEVER, BorrowWithinCohort(max_priority_threshold=5)
            )
        },
        {"fair_sharing_weight": 0.0},
        {"fair_sharing_weight": 1.1e-9},
        {"fair_sharing_weight": 1e9},
        {"flavor_fungibility": FlavorFungibility(TRY, TRY, PREEMPT_FIRST)},
        {"flavor_fungibility": FlavorFungibility(TRY, TRY)},
    ],
    ids=[
        "reclaim and borrow",
        "int32 floor",
        "threshold while never",
        "weight 0",
        "tiny",
        "max",
        "preference with both TryNextFlavor",
        "both TryNextFlavor without preference",
    ],
)
async def test_cluster_queue_settings_kueue_accepts(world: World, changes: dict[str, Any]) -> None:
    made = await world.service.create_cluster_queue(OPERATOR, spec(**changes))
    assert world.q.cluster_queues[(CLUSTER, "research")] == made


async def test_a_cluster_queue_keeps_its_settings_on_update(world: World) -> None:
    await world.service.create_cluster_queue(OPERATOR, spec())
    fungibility = FlavorFungibility(TRY, TRY, PREEMPT_FIRST)
    borrow = preemption(ReclaimWithinCohort.ANY, BorrowWithinCohort(LOWER, 100))
    changed = await world.service.update_cluster_queue(
        OPERATOR,
        spec(preemption=borrow, flavor_fungibility=fungibility, fair_sharing_weight=2.5),
    )
    stored = world.q.cluster_queues[(CLUSTER, "research")]
    assert stored == changed
    assert (stored.preemption, stored.flavor_fungibility, stored.fair_sharing_weight) == (
        borrow,
        fungibility,
        2.5,
    )


def cohort(**changes: Any) -> CohortSpec:
    return replace(CohortSpec(CLUSTER, "team"), **changes)


COHORT_CASES: list[tuple[str, dict[str, Any], set[tuple[str, str]]]] = [
    ("uppercase name", {"name": "Team"}, {("name", "INVALID_NAME")}),
    ("description not text", {"description": "\x00"}, {("description", "INVALID")}),
    ("bad parent name", {"parent": "Lab Two"}, {("parent", "INVALID_NAME")}),
    ("its own parent", {"name": "lab", "parent": "lab"}, {("parent", "CYCLE")}),
    ("borrowing limit without parent",
     {"resource_groups": (gpu_group(ResourceQuota(NVIDIA_GPU, 8, 4)),)},
     {(f"{R0}.borrowing_limit", "NEEDS_PARENT")}),
    ("lending limit without parent",
     {"resource_groups": (gpu_group(ResourceQuota(NVIDIA_GPU, 8, None, 2)),)},
     {(f"{R0}.lending_limit", "NEEDS_PARENT")}),
    ("negative limit under a parent",
     {"parent": "lab", "resource_groups": (gpu_group(ResourceQuota(NVIDIA_GPU, 8, -1)),)},
     {(f"{R0}.borrowing_limit", "INVALID")}),
    ("negative nominal", {"resource_groups": (gpu_group(ResourceQuota(NVIDIA_GPU, -8)),)},
     {(f"{R0}.nominal_quota", "INVALID")}),
    ("unknown flavor",
     {"resource_groups": (gpu_group(ResourceQuota(NVIDIA_GPU, 8), flavor="h100"),)},
     {("resource_groups.0.flavors.0.flavor", "NOT_FOUND")}),
    ("negative weight", {"fair_sharing_weight": -0.5}, {("fair_sharing_weight", "INVALID")}),
    ("weight that collapses to 0", {"fair_sharing_weight": 5e-10},
     {("fair_sharing_weight", "TOO_SMALL")}),
]  # fmt: skip


@pytest.mark.parametrize(("changes", "expected"), [c[1:] for c in COHORT_CASES],
                         ids=[c[0] for c in COHORT_CASES])  # fmt: skip
async def test_cohort_rules(
    world: World, changes: dict[str, Any], expected: set[tuple[str, str]]
) -> None:
    before = dict(world.q.cohorts)
    with pytest.raises(ValidationFailed) as caught:
        await world.service.create_cohort(OPERATOR, cohort(**changes))
    assert issues(caught) == expected
    if changes.get("name", "team") == "lab":  # an existing one: the same refusal on update
        with pytest.raises(ValidationFailed) as caught:
            await world.service.update_cohort(OPERATOR, cohort(**changes))
        assert issues(caught) == expected
    assert world.q.cohorts == before


async def test_a_parent_may_not_make_a_cohort_its_own_ancestor(world: World) -> None:
    await world.service.create_cohort(OPERATOR, cohort(name="org", parent="lab"))
    await world.service.create_cohort(OPERATOR, cohort(name="team", parent="org"))
    with pytest.raises(ValidationFailed) as caught:
        await world.service.update_cohort(OPERATOR, cohort(name="lab", parent="team"))
    (issue,) = caught.value.issues
    assert (issue.field, issue.code) == ("parent", "CYCLE")
    assert "lab -> team -> org -> lab" in issue.message
    assert world.q.cohorts[(CLUSTER, "lab")].parent is None
    # moving lab under a cohort outside its subtree is fine
    await world.service.update_cohort(OPERATOR, cohort(name="lab", parent="everyone"))


async def test_a_cohort_in_a_tree_created_and_updated_whole(world: World) -> None:
    under = cohort(
        parent="lab",
        description="the team's pool",
        resource_groups=(gpu_group(ResourceQuota(NVIDIA_GPU, 4, 2, 6)),),  # lends beyond 4
        fair_sharing_weight=0.5,
    )
    made = await world.service.create_cohort(OPERATOR, under)
    assert world.q.cohorts[(CLUSTER, "team")] == made
    assert (made.parent, made.fair_sharing_weight) == ("lab", 0.5)
    with pytest.raises(Conflict):
        await world.service.create_cohort(OPERATOR, under)
    world.clock.current += timedelta(minutes=1)
    changed = await world.service.update_cohort(OPERATOR, cohort(description="now a root"))
    assert changed.created_at == made.created_at
    assert (changed.parent, changed.resource_groups, changed.fair_sharing_weight) == (None, (), 1)
    assert world.q.cohorts[(CLUSTER, "team")] == changed
    with pytest.raises(NotFound):
        await world.service.update_cohort(OPERATOR, cohort(name="nobody"))


async def test_an_implicit_parent_is_a_name_and_a_parent_may_go_before_its_children(
    world: World,
) -> None:
    """Kueue's parentName need not name a Cohort object (an implicit cohort)."""
    await world.service.create_cohort(OPERATOR, cohort(parent="everyone"))
    quotas = (await world.service.overview(OPERATOR, [CLUSTER]))[CLUSTER]
    assert {c.name for c in quotas.cohorts} == {"lab", "team"}
    async with world.uow(TenantScope.system()) as uow:
        quota_set = await uow.quotas.quota_set(CLUSTER)
    team = quota_set.cohort("team")
    assert team is not None and team.parent == "everyone"
    assert quota_set.cohort("everyone") is None
    await world.service.update_cohort(OPERATOR, cohort(parent="lab"))
    await world.service.delete_cohort(OPERATOR, cluster_id=CLUSTER, name="lab")
    assert world.q.cohorts[(CLUSTER, "team")].parent == "lab"  # now implicit


async def test_a_flavor_a_cohort_holds_quota_in_stays(world: World) -> None:
    pool = (gpu_group(ResourceQuota(NVIDIA_GPU, 2), flavor="nvidia-tesla-t4"),)
    await world.service.create_cohort(OPERATOR, cohort(resource_groups=pool))
    with pytest.raises(Conflict) as caught:
        await world.service.delete_flavor(OPERATOR, cluster_id=CLUSTER, name="nvidia-tesla-t4")
    assert caught.value.code == "IN_USE" and "cohort team" in caught.value.message


async def test_fair_sharing_is_stored_per_cluster_and_read_with_the_quotas(world: World) -> None:
    async with world.uow(TenantScope.system()) as uow:
        assert not (await uow.quotas.quota_set(CLUSTER)).fair_sharing
    commits = world.uow.store.commits
    saved = await world.service.update_quota_settings(
        OPERATOR, QuotaSettings(CLUSTER, fair_sharing=True)
    )
    assert saved == QuotaSettings(CLUSTER, fair_sharing=True)
    assert world.uow.store.commits == commits + 1
    async with world.uow(TenantScope.system()) as uow:
        assert (await uow.quotas.quota_set(CLUSTER)).fair_sharing
    overview = (await world.service.overview(OPERATOR, [CLUSTER]))[CLUSTER]
    assert overview.settings == saved
    with pytest.raises(NotFound):
        await world.service.update_quota_settings(OPERATOR, QuotaSettings(ClusterId(uuid.uuid4())))
