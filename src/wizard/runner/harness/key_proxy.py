"""A loopback proxy that adds the gateway key, so no engine process ever holds it.

The agent runs commands as the same user as its engine, so anything in the engine's
environment or config files is within the agent's reach. The engine is therefore pointed at
this proxy on 127.0.0.1 with a random per-run token instead of the real key. The proxy
checks the token, swaps it for the real key (`x-api-key` and `Authorization` alike), and
relays one request per connection to the real gateway, streaming the answer back.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import ssl
from types import TracebackType
from urllib.parse import urlsplit

log = logging.getLogger(__name__)

_AUTH_HEADERS = ("x-api-key", "authorization")


class KeyProxy:
    """Relays an engine's model requests to `upstream`, adding `key`."""

    def __init__(self, upstream: str, key: str) -> None:
        parts = urlsplit(upstream)
        self._scheme = parts.scheme or "http"
        self._host = parts.hostname or "127.0.0.1"
        self._port = parts.port or (443 if self._scheme == "https" else 80)
        self._prefix = parts.path.rstrip("/")
        self._key = key
        self.token = f"wizard-run-{secrets.token_urlsafe(24)}"
        self._server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        """The proxy's base URL, for the engine's config."""
        assert self._server is not None, "the proxy is not running"
        return f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    async def __aenter__(self) -> KeyProxy:
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", 0, limit=64 << 20)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()

    def _rewrite(self, head: bytes) -> bytes | None:
        """The request head for the upstream, or None when the token is wrong."""
        request_line, *lines = head.decode("latin-1").rstrip("\r\n").split("\r\n")
        method, target, version = request_line.split(" ", 2)
        out, authorised = [f"{method} {self._prefix}{target} {version}"], False
        for line in lines:
            name, _, value = line.partition(":")
            lowered = name.strip().lower()
            if lowered in _AUTH_HEADERS:
                authorised |= self.token in value
                value = value.replace(self.token, self._key)
            elif lowered in ("host", "connection"):
                continue
            out.append(f"{name}:{value}")
        out += [f"Host: {self._host}", "Connection: close"]
        return ("\r\n".join(out) + "\r\n\r\n").encode("latin-1") if authorised else None

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            body = await _read_body(reader, head)
            upstream_head = self._rewrite(head)
            if upstream_head is None:
                writer.write(
                    b"HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                )
                return
            context = ssl.create_default_context() if self._scheme == "https" else None
            up_reader, up_writer = await asyncio.open_connection(
                self._host, self._port, ssl=context
            )
            try:
                up_writer.write(upstream_head + body)
                await up_writer.drain()
                await _pipe_response(up_reader, writer)
            finally:
                up_writer.close()
        except (ConnectionError, asyncio.IncompleteReadError, OSError) as exc:
            log.debug("key proxy relay ended: %s", exc)
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()


async def _read_body(reader: asyncio.StreamReader, head: bytes) -> bytes:
    """The request body, by content-length or chunked (relayed as it came)."""
    lines = [line.lower() for line in head.split(b"\r\n")]
    if b"transfer-encoding: chunked" in lines:
        body = b""
        while True:
            size_line = await reader.readuntil(b"\r\n")
            size = int(size_line.split(b";")[0], 16)
            chunk = await reader.readexactly(size + 2)
            body += size_line + chunk
            if size == 0:
                return body
    length = next(
        (int(line.split(b":", 1)[1]) for line in lines if line.startswith(b"content-length:")), 0
    )
    return await reader.readexactly(length)


async def _pipe_response(upstream: asyncio.StreamReader, client: asyncio.StreamWriter) -> None:
    """Relay the response, telling the client the connection closes after it."""
    head = await upstream.readuntil(b"\r\n\r\n")
    lines = [
        line
        for line in head.rstrip(b"\r\n").split(b"\r\n")
        if not line.lower().startswith(b"connection:")
    ]
    client.write(b"\r\n".join([*lines, b"connection: close"]) + b"\r\n\r\n")
    while chunk := await upstream.read(1 << 16):
        client.write(chunk)
        await client.drain()
