"""Serving the ASGI app with uvicorn, with the limits uvicorn leaves open.

uvicorn times out idle keep-alive connections, but not a client that opens a connection and sends
its headers (or its body) a byte at a time, nor one whose headers never end: such sockets stay
open for ever. `GuardedHttpProtocol` closes a connection whose request headers are not complete
within `header_timeout` of the request's first byte (or of the connection, before that), whose
body does not arrive within the same time after its headers, or whose headers pass MAX_HEADER_BYTES.
WebSocket messages are bounded by uvicorn's `ws_max_size`, set to the body limit.

`listen` binds the socket before anything else happens, so a port in use is an error before a
token is printed, not after.
"""

from __future__ import annotations

import asyncio
import functools
import json
import socket
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

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
