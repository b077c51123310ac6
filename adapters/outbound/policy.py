"""The OutboundPolicy port over this host's resolver.

`check` resolves the URL's host with the event loop's getaddrinfo (the resolver the service's own
clients use, so a name is judged on the addresses they would get) and hands every address to
`domain.model.outbound.judge`; an IP address is judged as it is. A resolver that fails or takes
longer than `timeout` seconds is a refusal like any other. The check at submission is advice to
the caller; what holds is the same rules applied again to each address a client connects to
(the load generator's connector does), since a name may resolve elsewhere by then.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Awaitable, Callable, Sequence
from ipaddress import ip_address

from domain.model.outbound import IPAddress, OutboundRules, OutboundUrl, Verdict, judge

log = logging.getLogger(__name__)

Resolve = Callable[[str, int], Awaitable[Sequence[str]]]
"""A host name and port to the addresses it resolves to, as text; raises OSError when none."""


async def system_resolve(host: str, port: int) -> list[str]:
    found = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(sockaddr[0]) for *_, sockaddr in found]


class ResolvingOutboundPolicy:
    def __init__(
        self, rules: OutboundRules, *, resolve: Resolve = system_resolve, timeout: float = 5.0
    ) -> None:
        self.rules = rules
        self._resolve = resolve
        self._timeout = timeout

    async def check(self, url: OutboundUrl) -> Verdict:
        addresses: list[IPAddress] = []
        if url.address is not None:
            addresses.append(url.address)
        else:
            try:
                async with asyncio.timeout(self._timeout):
                    found = await self._resolve(url.host, url.port)
                addresses = [ip_address(a.partition("%")[0]) for a in found]
            except (OSError, TimeoutError, ValueError) as exc:
                log.info("outbound: %s does not resolve (%s)", url.host, type(exc).__name__)
        verdict = judge(url, addresses, self.rules)
        if verdict.problem is not None:
            log.info("outbound: refused %s (%s)", url.host, ", ".join(verdict.refusals))
        return verdict
