"""The one policy every URL a caller gives passes before it is reached."""

from __future__ import annotations

from typing import Protocol

from domain.model.outbound import OutboundUrl, Verdict


class OutboundPolicy(Protocol):
    """Whether a caller's URL may be reached from here (domain.model.outbound): resolves its
    host and judges every address."""

    async def check(self, url: OutboundUrl) -> Verdict:
        """Never raises: a name that does not resolve is a refusal like any other."""
        ...
