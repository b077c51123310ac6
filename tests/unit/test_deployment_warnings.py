"""A deployment that asks more replicas than its cluster can ever run is accepted, and says so.

Covers: 20 replicas of one GPU on 16 A100s (two nodes of 8): only 16 can ever run, said with the
cluster's count; replicas of several GPUs are counted whole; nodes whose cores run out before
their GPUs are counted by what they hold; a cluster that lost every node that held one; no word
when they all fit, when the deployment is stopped, or when its cluster is gone.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from domain.model.deployment import EngineArgs
from domain.serving.capacity import REPLICAS_EXCEED_CLUSTER, DeploymentWarning, warnings
from tests.unit.test_deployments import A100, World


@pytest.fixture
def world() -> World:
    return World()  # cluster "sim": 2 nodes of 8 A100s (64 cores, 512 GB each), 1 of 4 T4s


def said(message: str) -> tuple[DeploymentWarning, ...]:
    return (DeploymentWarning(REPLICAS_EXCEED_CLUSTER, message, "replicas"),)


@pytest.mark.parametrize(
    ("replicas", "gpus", "cores", "expected"),
    [
        (20, 1, 4.0, "only 16 of 20 replicas can ever run: cluster sim has 16 {a100} GPUs"),
        (
            9,
            2,
            4.0,
            "only 8 of 9 replicas can ever run: cluster sim has 16 {a100} GPUs, 2 a replica",
        ),
        (
            5,
            1,
            32.0,
            "only 4 of 5 replicas can ever run: the nodes of cluster sim hold 4 replicas of "
            "1 x {a100}, 32 cores, 16 GB",
        ),
    ],
)
async def test_replicas_the_cluster_can_never_run_are_named(
    world: World, replicas: int, gpus: int, cores: float, expected: str
) -> None:
    args = EngineArgs(tensor_parallel_size=gpus)
    d = await world.service.deploy(
        world.alice, world.request(replicas=replicas, engine_args=args, cpu_cores=cores)
    )
    assert warnings(d, world.cluster) == said(expected.format(a100=A100))


async def test_a_cluster_that_lost_its_nodes_runs_none(world: World) -> None:
    d = await world.service.deploy(world.alice, world.request(replicas=2))
    smaller = replace(world.cluster, nodes=[n for n in world.cluster.nodes if n.gpu_type != A100])
    assert warnings(d, smaller) == said(
        f"none of the 2 replicas can run: no node of cluster sim holds one "
        f"(2 x {A100}, 4 cores, 16 GB)"
    )


async def test_no_word_when_all_can_run_or_nothing_is_asked(world: World) -> None:
    d = await world.service.deploy(world.alice, world.request(replicas=8))  # 8 x 2 = 16 GPUs
    assert warnings(d, world.cluster) == ()
    assert warnings(d, None) == ()
    too_many = await world.service.deploy(world.alice, world.request(name="more", replicas=9))
    assert warnings(too_many, world.cluster) != ()
    stopped = await world.service.stop(world.alice, too_many.id)
    assert warnings(stopped, world.cluster) == ()
