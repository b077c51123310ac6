"""The listening socket `budcluster serve` binds before anything else.

Covers: a port in use is an OSError at once (nothing is printed or made before it); connections
accepted on the socket have TCP_NODELAY, as those of a socket asyncio makes itself would (without
it every answer on a kept-alive connection waited out the client's delayed ACK, ~40 ms, found by
benchmarks/contention.py).
"""

from __future__ import annotations

import asyncio
import socket

import pytest

from budcluster.http.server import listen


def test_a_port_in_use_is_refused_at_once() -> None:
    first = listen("127.0.0.1", 0)
    try:
        with pytest.raises(OSError, match="in use"):
            listen("127.0.0.1", first.getsockname()[1])
    finally:
        first.close()


async def test_accepted_connections_send_without_delay() -> None:
    sock = listen("127.0.0.1", 0)
    accepted: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    class Probe(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            conn = transport.get_extra_info("socket")
            accepted.set_result(conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            transport.close()

    server = await asyncio.get_running_loop().create_server(Probe, sock=sock)
    try:
        _, writer = await asyncio.open_connection(*sock.getsockname()[:2])
        assert await asyncio.wait_for(accepted, 5) != 0
        writer.close()
    finally:
        server.close()
        await server.wait_closed()
