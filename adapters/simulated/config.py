"""A simulated cluster's shape and pace, kept in the cluster's (non-secret) settings.

Its nodes carry the labels a real GPU node has (the GPU Feature Discovery product label and the
hostname), so ResourceFlavors select them as they would on Kubernetes.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from typing import Any

from domain.model.cluster import Node, NodeType
from domain.model.ids import ClusterId, NodeId
from domain.model.quota import GPU_LABEL

DEFAULT_NODES = "2x8xnvidia-a100-80gb,1x4xnvidia-tesla-t4"
HOSTNAME_LABEL = "kubernetes.io/hostname"
_GROUP = re.compile(r"^(\d+)x(\d+)x([a-z0-9][a-z0-9.-]*)$")


@dataclass(frozen=True)
class NodeGroup:
    count: int
    gpu_count: int
    gpu_type: str
    cpu_cores: float = 96.0
    memory_gb: float = 1024.0


def parse_node_groups(text: str) -> list[NodeGroup]:
    """`2x8xnvidia-a100-80gb,1x4xnvidia-tesla-t4`: nodes x GPUs per node x GPU type."""
    groups: list[NodeGroup] = []
    for part in text.split(","):
        match = _GROUP.match(part.strip().lower())
        if match is None:
            raise ValueError(
                f"bad node group {part!r}: expected NODESxGPUSxTYPE, e.g. 2x8xnvidia-a100-80gb"
            )
        count, gpus, gpu_type = int(match[1]), int(match[2]), match[3]
        if count < 1 or gpus < 0:
            raise ValueError(f"bad node group {part!r}: need at least one node")
        groups.append(NodeGroup(count, gpus, gpu_type))
    return groups


def settings_for(
    groups: list[NodeGroup], *, time_scale: float = 1.0, startup_seconds: float = 2.0
) -> dict[str, Any]:
    if time_scale <= 0:
        raise ValueError("time_scale must be positive")
    return {
        "time_scale": time_scale,
        "startup_seconds": startup_seconds,
        "node_groups": [
            {
                "count": g.count,
                "gpu_count": g.gpu_count,
                "gpu_type": g.gpu_type,
                "cpu_cores": g.cpu_cores,
                "memory_gb": g.memory_gb,
            }
            for g in groups
        ],
    }


@dataclass(frozen=True)
class SimulationConfig:
    time_scale: float
    startup_seconds: float
    groups: tuple[NodeGroup, ...]

    @classmethod
    def from_settings(cls, settings: dict[str, Any]) -> SimulationConfig:
        groups = tuple(NodeGroup(**g) for g in settings.get("node_groups", []))
        return cls(
            float(settings.get("time_scale", 1.0)),
            float(settings.get("startup_seconds", 2.0)),
            groups or tuple(parse_node_groups(DEFAULT_NODES)),
        )

    def nodes(self, cluster_id: ClusterId) -> list[Node]:
        nodes: list[Node] = []
        for group in self.groups:
            short = _model_token(group.gpu_type) if group.gpu_count else "cpu"
            for i in range(group.count):
                name = f"sim-{short}-{len(nodes)}"
                nodes.append(
                    Node(
                        id=NodeId(uuid.uuid5(cluster_id, name)),
                        cluster_id=cluster_id,
                        name=name,
                        node_type=NodeType.GPU if group.gpu_count else NodeType.WORKER,
                        gpu_type=group.gpu_type if group.gpu_count else None,
                        gpu_count=group.gpu_count,
                        cpu_cores=group.cpu_cores,
                        memory_gb=group.memory_gb,
                        hardware_info={
                            "simulated": True,
                            "gpu_product": group.gpu_type,
                            "index_in_group": i,
                        },
                        labels=(
                            {GPU_LABEL: group.gpu_type, HOSTNAME_LABEL: name}
                            if group.gpu_count
                            else {HOSTNAME_LABEL: name}
                        ),
                    )
                )
        return nodes


def _model_token(gpu_type: str) -> str:
    """`nvidia-a100-80gb` -> `a100`, `nvidia-tesla-t4` -> `t4`."""
    tokens = gpu_type.split("-")
    return next((t for t in tokens if any(c.isdigit() for c in t)), tokens[-1])
