"""The server side of an HTTP/1.1 connection on asyncio streams, framed by h11.

wizard serves HTTP in two places: the gateway proxy's engine-facing side and the scripted
gateway. Neither parses HTTP itself: h11 (which httpx already brings) reads requests and
frames responses (content length, chunked streaming, keep-alive), and this module only moves
its bytes. A response can be cut on purpose: `abort()` resets the connection mid-body.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from http import HTTPStatus

import h11

_READ_SIZE = 65536


@dataclass(frozen=True)
class Request:
    """One request: method, target, headers (names lower-cased) and the whole body."""

    method: str
    target: str
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str, default: str = "") -> str:
        """The first value of header `name` (lower case)."""
        return next((value for key, value in self.headers if key == name), default)


class BadRequest(Exception):
    """The client sent something that is not HTTP/1.1."""


class NotAdmitted(Exception):
    """A request refused on its head, before its body is read: its status and why."""

    def __init__(self, status: int, why: str) -> None:
        super().__init__(why)
        self.status = status


class HttpConnection:
    """One connection: read a request, answer it, and again while both sides keep it open."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self._h11 = h11.Connection(h11.SERVER)
        self.bytes_sent = 0  # of the current response
        self._head_only = False  # the current request is HEAD: its answer has no body

    async def request(
        self,
        admit: Callable[[list[tuple[str, str]]], bool] | None = None,
        max_body: int | None = None,
    ) -> Request | None:
        """The next request; None once the client has closed or the connection cannot go on.
        A head `admit` refuses (401), or a body over `max_body` bytes (413), raises
        `NotAdmitted` before more of the body is read."""
        if self._h11.our_state is h11.DONE and self._h11.their_state is h11.DONE:
            self._h11.start_next_cycle()
        if self._h11.our_state is not h11.IDLE:
            return None
        head: h11.Request | None = None
        headers: list[tuple[str, str]] = []
        body = bytearray()
        while True:
            event = await self._next_event()
            if isinstance(event, h11.Request):
                head = event
                headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in head.headers]
                if admit is not None and not admit(headers):
                    raise NotAdmitted(401, "Unauthorized")
            elif isinstance(event, h11.Data):
                body += event.data
                if max_body is not None and len(body) > max_body:
                    raise NotAdmitted(413, "Request body too large")
            elif isinstance(event, h11.EndOfMessage):
                assert head is not None
                self._head_only = head.method == b"HEAD"
                return Request(head.method.decode(), head.target.decode(), headers, bytes(body))
            elif isinstance(event, h11.ConnectionClosed):
                return None

    async def _next_event(self) -> object:
        while True:
            try:
                event = self._h11.next_event()
            except h11.RemoteProtocolError as exc:
                raise BadRequest(str(exc)) from exc
            if event is not h11.NEED_DATA:
                return event
            self._h11.receive_data(await self.reader.read(_READ_SIZE))

    async def respond(
        self, status: int, headers: Iterable[tuple[str, str]], body: bytes | None = None
    ) -> None:
        """Start a response; with `body`, the whole response (content length), else a
        stream (chunked) that `send` continues and `end` finishes."""
        self.bytes_sent = 0
        fields = [(name, value) for name, value in headers]
        if body is not None:
            fields.append(("content-length", str(len(body))))
        else:
            fields.append(("transfer-encoding", "chunked"))
        try:
            reason = HTTPStatus(status).phrase
        except ValueError:
            reason = ""
        head = h11.Response(status_code=status, headers=fields, reason=reason)
        await self._write(self._h11.send(head))
        if body is not None:
            if not self._head_only:
                await self.send(body)
            await self.end()

    async def send(self, data: bytes) -> None:
        """More of the response body."""
        if data:
            await self._write(self._h11.send(h11.Data(data=data)))

    async def end(self) -> None:
        """The response is complete."""
        await self._write(self._h11.send(h11.EndOfMessage()))

    def abort(self) -> None:
        """Reset the connection now: the response is cut where it is."""
        self.writer.transport.abort()

    async def close(self) -> None:
        """Close the connection (whatever was sent stays sent)."""
        self.writer.close()
        with contextlib.suppress(Exception):
            await self.writer.wait_closed()

    @property
    def client_gone(self) -> bool:
        """Whether the client has hung up."""
        return self.reader.at_eof() or self.writer.transport.is_closing()

    async def _write(self, data: bytes | None) -> None:
        if data:
            self.writer.write(data)
            self.bytes_sent += len(data)
            await self.writer.drain()


async def stop_serving(server: asyncio.AbstractServer | None, wait_s: float | None = None) -> None:
    """Stop `server` listening and wait, `wait_s` at most, for it to close: what goes wrong
    in that wait is of no account once the server is closing."""
    if server is None:
        return
    server.close()
    with contextlib.suppress(Exception):
        await asyncio.wait_for(server.wait_closed(), wait_s)
