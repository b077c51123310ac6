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


def test_small_websocket_messages_go_uncompressed_and_the_stream_still_decodes() -> None:
    """On a permessage-deflate connection, a message under SMALL_MESSAGE_BYTES goes as it is
    (RSV1 unset) and a longer one compressed; a standard client's decoder, keeping its context
    across messages, reads them all in any mix."""
    from websockets.extensions.permessage_deflate import (
        ClientPerMessageDeflateFactory,
        PerMessageDeflate,
    )
    from websockets.frames import Frame, Opcode

    from budcluster.http.server import SMALL_MESSAGE_BYTES, _Deflate

    server = _Deflate(server_max_window_bits=12, client_max_window_bits=12)
    client = ClientPerMessageDeflateFactory(client_max_window_bits=True)
    answer, sending = server.process_request_params(client.get_request_params(), [])
    receiving = client.process_response_params(answer, [])
    assert isinstance(receiving, PerMessageDeflate)
    small = b'{"type":"next","payload":{"data":' + b"1" * 200 + b"}}"
    large = b'{"type":"next","payload":{"data":[' + b'"same",' * 2000 + b'"end"]}}'
    assert len(small) < SMALL_MESSAGE_BYTES < len(large)
    for data in (large, small, large, small, small, large):
        sent = sending.encode(Frame(Opcode.TEXT, data))
        assert sent.rsv1 is (data is large)
        assert len(sent.data) < len(data) / 10 if data is large else sent.data == data
        assert receiving.decode(sent).data == data
