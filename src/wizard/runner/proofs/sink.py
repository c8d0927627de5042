"""The local sink a runtime proof points the vendor's endpoint at: an HTTP server on a Unix
socket in wizard's own folder, which the sandbox runtime's proxy hands the probe's requests
to (`SandboxPolicy.probing`). It records each request and answers it as the API would
(200 and a small JSON body); nothing it receives goes anywhere else."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from urllib.parse import urlsplit

import h11

from wizard.httpserver import stop_serving

MAX_BODY_BYTES = 1_000_000
# What the sink keeps of a probe at most: a probe that floods it (the app's code runs in it)
# is answered still, and what is past these bounds is not kept (it proves nothing).
MAX_KEPT_REQUESTS = 200
MAX_KEPT_BYTES = 32_000_000
CLOSE_WAIT_S = 5.0


@dataclass(frozen=True)
class Received:
    """One request the sink received."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def header(self, name: str) -> str:
        return self.headers.get(name.lower(), "")


@dataclass
class ProbeSink:
    """`async with ProbeSink(socket) as sink:` serves on `socket`; `sink.received` lists
    what came in."""

    socket: Path
    received: list[Received] = field(default_factory=list)
    kept_bytes: int = 0
    _server: asyncio.Server | None = None

    async def __aenter__(self) -> ProbeSink:
        self._server = await asyncio.start_unix_server(self._serve, path=str(self.socket))
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await stop_serving(self._server, 2)
        self.socket.unlink(missing_ok=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connection = h11.Connection(h11.SERVER, max_incomplete_event_size=64 * 1024)
        try:
            await self._one(connection, reader, writer)
            # The proxy closes first: closing under a write it has not finished would turn
            # the answer it already has into an error for the code under probe.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(_until_closed(reader), CLOSE_WAIT_S)
        except (h11.RemoteProtocolError, ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def _one(
        self, connection: h11.Connection, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        """Serve one request, and say the connection ends with it (a proxy that pooled the
        connection would otherwise send the next request into a closed socket)."""
        request: h11.Request | None = None
        body = bytearray()
        while True:
            event = connection.next_event()
            if event is h11.NEED_DATA:
                data = await reader.read(65536)
                connection.receive_data(data)
                if not data and request is None:
                    return
                continue
            if isinstance(event, h11.ConnectionClosed):
                return
            if isinstance(event, h11.Request):
                request = event
            elif isinstance(event, h11.Data):
                room = min(MAX_BODY_BYTES - len(body), MAX_KEPT_BYTES - self.kept_bytes - len(body))
                body.extend(event.data[: max(room, 0)])
            elif isinstance(event, h11.EndOfMessage):
                break
        assert request is not None
        headers = {name.decode().lower(): value.decode(errors="replace")
                   for name, value in request.headers}  # fmt: skip
        target = request.target.decode(errors="replace")
        if len(self.received) < MAX_KEPT_REQUESTS and self.kept_bytes < MAX_KEPT_BYTES:
            self.kept_bytes += len(body)
            path = urlsplit(target).path or "/"
            self.received.append(Received(request.method.decode(), path, headers, bytes(body)))
        answer = b'{"ok":true,"id":"wizard-probe"}'
        response = h11.Response(
            status_code=200,
            headers=[
                ("content-type", "application/json"),
                ("content-length", str(len(answer))),
                ("connection", "close"),
            ],
        )
        writer.write(connection.send(response) + connection.send(h11.Data(data=answer)))
        writer.write(connection.send(h11.EndOfMessage()))
        await writer.drain()


async def _until_closed(reader: asyncio.StreamReader) -> None:
    """Read, and drop, what comes until the peer closes."""
    while await reader.read(65536):
        pass
