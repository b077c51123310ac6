"""Serving the ASGI app with uvicorn, with the limits uvicorn leaves open.

uvicorn times out idle keep-alive connections, but not a client that opens a connection and sends
its headers (or its body) a byte at a time, nor one whose headers never end: such sockets stay
open for ever. `GuardedHttpProtocol` closes a connection whose request headers are not complete
within `header_timeout` of the request's first byte (or of the connection, before that), whose
body does not arrive within the same time after its headers, or whose headers pass MAX_HEADER_BYTES.
WebSocket messages are bounded by uvicorn's `ws_max_size`, set to the body limit.

WebSocket messages shorter than `SMALL_MESSAGE_BYTES` go uncompressed on a permessage-deflate
connection (`WebSocketProtocol`).

`listen` binds the socket before anything else happens, so a port in use is an error before a
token is printed, not after.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import socket
from collections.abc import Sequence
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.extensions.base import Extension
from websockets.extensions.permessage_deflate import (
    PerMessageDeflate,
    ServerPerMessageDeflateFactory,
)
from websockets.frames import Frame, Opcode
from websockets.server import ServerProtocol
from websockets.typing import ExtensionParameter

from budcluster.http.guards import error_body

MAX_HEADER_BYTES = 64 * 1024


def _raw_response(status: str, message: str, code: str) -> bytes:
    body = json.dumps(error_body(message, code)).encode()
    return (
        f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    ).encode() + body


class GuardedHttpProtocol(HttpToolsProtocol):
    def __init__(self, *args: Any, header_timeout: float, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_timeout = header_timeout
        self._timer: asyncio.TimerHandle | None = None
        self._header_bytes = 0
        self._in_headers = True

    def _arm(self) -> None:
        self._disarm()
        self._timer = self.loop.call_later(self._header_timeout, self._timed_out)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _timed_out(self) -> None:
        self._timer = None
        if self.transport.is_closing():
            return
        if self._in_headers:
            self.transport.write(
                _raw_response("408 Request Timeout", "the request was too slow", "REQUEST_TIMEOUT")
            )
        self.transport.close()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._in_headers:
            self._header_bytes += len(data)
        super().data_received(data)
        if self._in_headers and self._header_bytes > MAX_HEADER_BYTES:
            self._disarm()
            if not self.transport.is_closing():
                self.transport.write(
                    _raw_response(
                        "431 Request Header Fields Too Large",
                        f"request headers larger than {MAX_HEADER_BYTES} bytes",
                        "HEADERS_TOO_LARGE",
                    )
                )
                self.transport.close()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_headers = True
        self._header_bytes = 0
        self._arm()

    def on_headers_complete(self) -> None:
        self._in_headers = False
        self._disarm()
        super().on_headers_complete()
        upgrading = self.parser.should_upgrade() and self._should_upgrade()
        if not upgrading:
            self._arm()  # now for the body

    def on_message_complete(self) -> None:
        self._disarm()
        super().on_message_complete()


def protocol(header_timeout: float) -> Any:
    """The protocol factory for uvicorn's `http` setting."""
    return functools.partial(GuardedHttpProtocol, header_timeout=header_timeout)


def listen(host: str, port: int) -> socket.socket:
    """A listening socket on (host, port); raises OSError (e.g. address already in use)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP said out loud: asyncio sets TCP_NODELAY only on connections of sockets that
    # name it, and without it every answer on a kept-alive connection waits out the client's
    # delayed ACK (~40 ms).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


SMALL_MESSAGE_BYTES = 4096
"""WebSocket messages shorter than this are sent uncompressed on a connection that negotiated
permessage-deflate: RFC 7692 compresses per message (RSV1 set on those that are), so a peer
decodes both. A schedule diff is one to a few KB and goes to every subscriber of a view;
deflating it costs each connection about 40 us, a quarter of a fan-out's time a subscriber
(benchmarks.event_to_screen, 1,000 subscribers: 124 ms from first to last without compression,
168 ms with), to save about a kilobyte. Snapshots and long queues are still compressed. (Node's
ws compresses from 1 KB by default; our many identical small messages are its worst case.)"""


class _SmallAsIs(PerMessageDeflate):
    def encode(self, frame: Frame) -> Frame:
        if (
            frame.fin
            and frame.opcode in (Opcode.TEXT, Opcode.BINARY)
            and len(frame.data) < SMALL_MESSAGE_BYTES
        ):
            return frame  # a whole message, RSV1 unset: the compressor's context is untouched
        return super().encode(frame)


class _Deflate(ServerPerMessageDeflateFactory):
    def process_request_params(
        self, params: Sequence[ExtensionParameter], accepted_extensions: Sequence[Extension]
    ) -> tuple[list[ExtensionParameter], PerMessageDeflate]:
        answer, agreed = super().process_request_params(params, accepted_extensions)
        return answer, _SmallAsIs(
            agreed.remote_no_context_takeover,
            agreed.local_no_context_takeover,
            agreed.remote_max_window_bits,
            agreed.local_max_window_bits,
            agreed.compress_settings,
        )


class WebSocketProtocol(WebSocketsSansIOProtocol):
    """uvicorn's sans-I/O WebSocket protocol with its permessage-deflate settings, sending
    small messages as they are (`SMALL_MESSAGE_BYTES`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.config.ws_per_message_deflate:
            self.conn = ServerProtocol(
                extensions=[
                    _Deflate(
                        server_max_window_bits=12,
                        client_max_window_bits=12,
                        compress_settings={"memLevel": 5},
                    )
                ],
                max_size=self.config.ws_max_size,
                logger=logging.getLogger("uvicorn.error"),
            )
