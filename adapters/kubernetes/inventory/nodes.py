"""A Kubernetes Node object, as the API returns it in JSON, turned into the domain's Node.

Only the shape is trusted, not the content: a node without a name, a label that is not a string
or a quantity that is not a Kubernetes quantity is a ValueError naming the field, since it means
the object did not come from a Kubernetes API. Parts a real node may lack (taints, addresses,
labels, nodeInfo) default to empty. A node without a Ready condition is not ready, as Kubernetes
treats it. CPU and memory are what the kubelet offers to pods (allocatable, else capacity):
memory_gb is GiB (bytes / 2**30), rounded to hundredths. The hardware comes from `hardware`. The
node id, unless given, is derived from the cluster id and the node name, so the same node keeps its
id across inventory refreshes.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from adapters.kubernetes.inventory import labels as lb
from adapters.kubernetes.inventory.hardware import VENDORS, AcceleratorKind, detect_hardware
from adapters.kubernetes.quantity import BYTES_PER_GIB, parse_quantity, whole_count
from domain.model.cluster import Node, NodeType
from domain.model.ids import ClusterId, NodeId

_CONDITION_FIELDS = ("reason", "message", "lastTransitionTime")


def node_from_k8s(
    obj: Mapping[str, Any], cluster_id: ClusterId, *, node_id: NodeId | None = None
) -> Node:
    """The domain Node for a Kubernetes Node object; ValueError when the object is malformed."""
    if not isinstance(obj, Mapping):
        raise ValueError(f"a Node object must be a mapping, not {type(obj).__name__}")
    metadata = _mapping(obj, "metadata")
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError("Node object has no metadata.name")
    where = f"node {name!r}"
    labels = _strings(metadata, "labels", where=f"{where} metadata")
    spec = _mapping(obj, "spec", where=where)
    status = _mapping(obj, "status", where=where)
    allocatable = _quantities(status, "allocatable", where=where)
    capacity = _quantities(status, "capacity", where=where)
    offered = {**capacity, **allocatable}
    node_info = {
        k: v for k, v in _mapping(status, "nodeInfo", where=where).items() if isinstance(v, str)
    }

    _device_counts(capacity, where=f"{where} status.capacity")  # refuses fractional devices
    hardware = detect_hardware(
        labels,
        device_counts=_device_counts(allocatable, where=f"{where} status.allocatable"),
        cpu_capacity=parse_quantity(capacity["cpu"]) if "cpu" in capacity else None,
        node_info=node_info,
    )
    unschedulable = spec.get("unschedulable", False)
    if not isinstance(unschedulable, bool):
        raise ValueError(f"{where}: spec.unschedulable must be true or false")
    conditions = _conditions(status, where=where)
    return Node(
        id=NodeId(uuid.uuid5(cluster_id, name)) if node_id is None else node_id,
        cluster_id=cluster_id,
        name=name,
        node_type=_node_type(labels, hardware.gpu_count, hardware.info.accelerator_kind),
        gpu_type=hardware.gpu_type,
        gpu_count=hardware.gpu_count,
        cpu_cores=float(parse_quantity(offered["cpu"])) if "cpu" in offered else 0.0,
        memory_gb=_gib(offered.get("memory")),
        ready=any(c["type"] == "Ready" and c["status"] == "True" for c in conditions),
        schedulable=not unschedulable,
        hardware_info=hardware.info.to_dict(),
        labels=dict(labels),
        internal_ip=_internal_ip(status, where=where),
        taints=_taints(spec, where=where),
        conditions=conditions,
        allocatable=allocatable,
        capacity=capacity,
        nfd_detected=hardware.nfd_detected,
        detection_method=hardware.method.value,
    )


def _node_type(labels: Mapping[str, str], devices: int, kind: AcceleratorKind) -> NodeType:
    """A control-plane node is MASTER even with GPUs; a node whose device plugin offers no
    devices (none installed, or none healthy) is a WORKER."""
    if any(role in labels for role in lb.CONTROL_PLANE_ROLES):
        return NodeType.MASTER
    if devices > 0:
        return NodeType.HPU if kind is AcceleratorKind.HPU else NodeType.GPU
    return NodeType.WORKER


def _device_counts(quantities: Mapping[str, str], *, where: str) -> dict[str, int]:
    """Accelerator counts by extended resource; a device count must be a whole number."""
    return {
        v.resource: whole_count(quantities[v.resource], what=f"{where}[{v.resource!r}]")
        for v in VENDORS
        if v.resource in quantities
    }


def _gib(memory: str | None) -> float:
    if memory is None:
        return 0.0
    return round(float(parse_quantity(memory) / BYTES_PER_GIB), 2)


def _mapping(parent: Mapping[str, Any], key: str, *, where: str = "Node") -> Mapping[str, Any]:
    value = parent.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValueError(f"{where}: {key} must be an object, not {type(value).__name__}")
    return value


def _sequence(parent: Mapping[str, Any], key: str, *, where: str) -> Sequence[Any]:
    value = parent.get(key)
    if value is None:
        return ()
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise ValueError(f"{where}: {key} must be a list, not {type(value).__name__}")
    return value


def _strings(parent: Mapping[str, Any], key: str, *, where: str) -> dict[str, str]:
    result: dict[str, str] = {}
    for k, v in _mapping(parent, key, where=where).items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise ValueError(f"{where}: {key} {k!r} must map a string to a string, not {v!r}")
        result[k] = v
    return result


def _quantities(status: Mapping[str, Any], key: str, *, where: str) -> dict[str, str]:
    """The quantities as reported (JSON numbers, which the API also accepts, as text)."""
    result: dict[str, str] = {}
    for resource, value in _mapping(status, key, where=where).items():
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise ValueError(f"{where}: status.{key}[{resource!r}] must be a quantity string")
        text = value if isinstance(value, str) else str(value)
        try:
            parse_quantity(text)
        except ValueError as error:
            raise ValueError(f"{where}: status.{key}[{resource!r}]: {error}") from None
        result[str(resource)] = text
    return result


def _conditions(status: Mapping[str, Any], *, where: str) -> list[dict[str, str]]:
    conditions: list[dict[str, str]] = []
    for item in _sequence(status, "conditions", where=f"{where} status"):
        if not isinstance(item, Mapping) or not isinstance(item.get("type"), str):
            raise ValueError(f"{where}: every status.conditions entry needs a type")
        condition = {"type": item["type"], "status": str(item.get("status", "Unknown"))}
        condition.update({f: str(item[f]) for f in _CONDITION_FIELDS if item.get(f) is not None})
        conditions.append(condition)
    return conditions


def _taints(spec: Mapping[str, Any], *, where: str) -> list[dict[str, str]]:
    taints: list[dict[str, str]] = []
    for item in _sequence(spec, "taints", where=f"{where} spec"):
        if not isinstance(item, Mapping):
            raise ValueError(f"{where}: spec.taints entries must be objects")
        key, effect = item.get("key"), item.get("effect")
        if not isinstance(key, str) or not key or not isinstance(effect, str) or not effect:
            raise ValueError(f"{where}: every spec.taints entry needs a key and an effect")
        value = item.get("value")
        taints.append(
            {"key": key, "value": value, "effect": effect}
            if isinstance(value, str)
            else {"key": key, "effect": effect}
        )
    return taints


def _internal_ip(status: Mapping[str, Any], *, where: str) -> str | None:
    for address in _sequence(status, "addresses", where=f"{where} status"):
        if not isinstance(address, Mapping):
            raise ValueError(f"{where}: status.addresses entries must be objects")
        if address.get("type") == "InternalIP" and isinstance(address.get("address"), str):
            return str(address["address"])
    return None
