"""Whether a live quota object still is what budcluster rendered (`objects.desired_objects`).

`drifted` compares the owned part of the live object with the desired one as a subset, field by
field: the API server adds defaults (admission settings) and other labels, which are not drift,
and returns quantities as strings ("8", "64Gi"), which are compared as values, as are v1beta1's
old names for MayStopSearch. A namespaceSelector, a flavor's nodeLabels and a NetworkPolicy's
pod selectors are compared whole, and optional fields budcluster leaves out (cohort, limits,
parent, node labels, taints, a threshold, a flavor fungibility preference, a policy peer's pod
selector, ipBlock or ports) are drift when someone adds them. A ClusterQueue's stopPolicy left out
reads as Kueue's default, None: a queue held by someone else is drift, one read back as None is
not. Status and metadata noise is never compared.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from adapters.kubernetes.kueue.objects import (
    CLUSTER_QUEUE,
    LOCAL_QUEUE,
    SPEC_HASH,
    owned_part,
    spec_hash,
)
from adapters.kubernetes.quantity import parse_quantity
from domain.model.quota import FungibilityPolicy

_QUANTITY_FIELDS = frozenset({"nominalQuota", "borrowingLimit", "lendingLimit", "weight"})
_ATOMIC_FIELDS = frozenset({"namespaceSelector", "nodeLabels", "podSelector"})
"""Compared whole: a label added to a selector or to a flavor's node labels narrows it."""
STOP_POLICY_DEFAULT = "None"
"""What the API server sets a ClusterQueue's stopPolicy to when it is left out."""
_OWNED_WHEN_ABSENT = frozenset(
    {
        "cohort",
        "cohortName",
        "parent",
        "parentName",
        "resourceGroups",
        "borrowingLimit",
        "lendingLimit",
        "nodeLabels",
        "nodeTaints",
        "tolerations",
        "description",
        "maxPriorityThreshold",
        "preference",
        "admissionChecks",
        "admissionChecksStrategy",
        "podSelector",
        "ipBlock",
        "ports",
        "egress",
    }
)
"""Fields budcluster owns even when it leaves them out: someone adding one is drift."""


def drifted(desired: Mapping[str, Any], live: Mapping[str, Any] | None) -> str | None:
    """Why `live` no longer matches `desired` ("missing", "spec.cohortName changed", ...), or
    None when it does."""
    if live is None:
        return "missing"
    metadata = live.get("metadata") or {}
    if metadata.get("deletionTimestamp"):
        return "being deleted"
    reason = _difference(owned_part(desired), owned_part(live), "")
    if reason is not None:
        if desired.get("kind") == LOCAL_QUEUE and reason.startswith("spec.clusterQueue"):
            return f"{reason} (immutable: delete and recreate)"
        return reason
    if desired.get("kind") == CLUSTER_QUEUE and (reason := _stop_policy(desired, live)):
        return reason
    live_labels = metadata.get("labels") or {}
    for key, value in desired["metadata"]["labels"].items():
        if live_labels.get(key) != value:
            return f"label {key} changed"
    if (metadata.get("annotations") or {}).get(SPEC_HASH) != spec_hash(desired):
        return f"annotation {SPEC_HASH} out of date"
    return None


def _stop_policy(desired: Mapping[str, Any], live: Mapping[str, Any]) -> str | None:
    want = (desired.get("spec") or {}).get("stopPolicy") or STOP_POLICY_DEFAULT
    have = (live.get("spec") or {}).get("stopPolicy") or STOP_POLICY_DEFAULT
    return None if want == have else "spec.stopPolicy changed"


def _difference(want: Any, have: Any, path: str, key: str | None = None) -> str | None:
    if key in _ATOMIC_FIELDS:
        return None if want == have else f"{path} changed"
    if isinstance(want, dict):
        return _dict_difference(want, have, path)
    if isinstance(want, list):
        if not isinstance(have, list) or len(have) != len(want):
            return f"{path} changed"
        for index, (w, h) in enumerate(zip(want, have, strict=True)):
            if (reason := _difference(w, h, f"{path}[{index}]")) is not None:
                return reason
        return None
    return None if _same_value(want, have, key) else f"{path} changed"


def _dict_difference(want: Mapping[str, Any], have: Any, path: str) -> str | None:
    if not isinstance(have, dict):
        return f"{path} changed"
    for key, value in want.items():
        where = _child(path, key)
        if key not in have:
            return f"{where} missing"
        if (reason := _difference(value, have[key], where, key)) is not None:
            return reason
    added = sorted((have.keys() - want.keys()) & _OWNED_WHEN_ABSENT)
    return f"{_child(path, added[0])} added" if added else None


def _child(path: str, key: str) -> str:
    if "/" in key or "." in key:
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


_SAME_NAMES: Mapping[str, Mapping[str, str]] = {
    "whenCanBorrow": {"Borrow": FungibilityPolicy.MAY_STOP_SEARCH.value},
    "whenCanPreempt": {"Preempt": FungibilityPolicy.MAY_STOP_SEARCH.value},
}
"""v1beta1's deprecated names, which a Kueue serving v1beta2 too reads back as MayStopSearch."""


def _same_value(want: Any, have: Any, key: str | None) -> bool:
    if key is not None and (names := _SAME_NAMES.get(key)) is not None:
        return bool(names.get(want, want) == names.get(have, have))
    if key in _QUANTITY_FIELDS:
        try:
            return parse_quantity(str(want)) == parse_quantity(str(have))
        except ValueError:
            return False
    return bool(want == have)
