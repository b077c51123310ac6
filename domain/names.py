"""Names that become Kubernetes objects must be DNS-1123 labels.

A job's name becomes a Helm release and object labels on real clusters, so it is held to the
strictest rule that applies: a DNS-1123 label (lowercase letters, digits and '-', starting and
ending with a letter or digit) no longer than Helm's 53-character release-name limit. Kueue's
objects (flavors, queues, cohorts) and reservations are plain objects: up to 63 characters.
Node labels, which ResourceFlavors select on, follow Kubernetes' label syntax.
"""

from __future__ import annotations

import re

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
MAX_NAME_LENGTH = 53
MAX_OBJECT_NAME = 63
"""Kueue objects (ResourceFlavor, ClusterQueue, LocalQueue, Cohort) and reservations."""

_LABEL_NAME = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")
_DNS1123_SUBDOMAIN = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)


def name_problem(name: str, *, max_length: int = MAX_NAME_LENGTH) -> str | None:
    """Why `name` is not acceptable, or None when it is."""
    if not name:
        return "must not be empty"
    if len(name) > max_length:
        return f"must be at most {max_length} characters (got {len(name)})"
    if not DNS1123_LABEL.match(name):
        return (
            "must be a DNS-1123 label: lowercase letters, digits and '-', "
            "starting and ending with a letter or digit"
        )
    return None


def label_problem(key: str, value: str) -> str | None:
    """Why `key: value` is not a Kubernetes label, or None when it is."""
    prefix, _, name = key.rpartition("/")
    if not name or len(name) > 63 or not _LABEL_NAME.match(name):
        return (
            f"label key {key!r} needs a name of 1 to 63 letters, digits, '-', '_' or '.', "
            "starting and ending with a letter or digit"
        )
    if "/" in key and (len(prefix) > 253 or not _DNS1123_SUBDOMAIN.match(prefix)):
        return f"label key {key!r} has a prefix that is not a DNS subdomain"
    if len(value) > 63 or not _LABEL_NAME.match(value):
        return (
            f"label value {value!r} of {key!r} must be at most 63 letters, digits, '-', '_' or "
            "'.', starting and ending with a letter or digit"
        )
    return None


def text_problem(value: str) -> str | None:
    """Text every store and every client can carry: no NUL, no lone UTF-16 surrogate."""
    if "\x00" in value:
        return "must not contain NUL characters"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "must be valid Unicode text (it holds a lone surrogate)"
    return None
