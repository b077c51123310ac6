"""Names that become Kubernetes objects must be DNS-1123 labels.

A job's name becomes a Helm release and object labels on real clusters, so it is held to the
strictest rule that applies: a DNS-1123 label (lowercase letters, digits and '-', starting and
ending with a letter or digit) no longer than Helm's 53-character release-name limit.
"""

from __future__ import annotations

import re

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
MAX_NAME_LENGTH = 53


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
