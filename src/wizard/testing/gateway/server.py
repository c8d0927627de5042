"""The scripted gateway's HTTP server: real HTTP/1.1 on 127.0.0.1, in-process or standalone.

It serves `POST /v1/messages` (Anthropic) and `POST /v1/chat/completions` (OpenAI), answers
each model request with the next scripted response, and records every request. HTTP/1.1 is
h11's (`wizard.httpserver`). Streams use chunked transfer encoding, so a scripted drop
(`drop_after_chars`) reaches the client as a broken stream rather than a clean end.
"""

from __future__ import annotations

import asyncio
import json
import socket
import struct
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from wizard.httpserver import BadRequest, HttpConnection, Request
from wizard.logs import logger
from wizard.signals import DEFAULT_GATEWAY_MARKER
from wizard.testing.gateway import wire
from wizard.testing.gateway.scenario import (
    BlocksResponse,
    ErrorResponse,
    RefusalResponse,
    Response,
    Scenario,
    TextBlock,
    load_scenario,
)

log = logger(__name__)

_EVENT_STREAM = [("content-type", "text/event-stream"), ("cache-control", "no-cache")]
_ROUTES = {"/v1/messages": "anthropic", "/v1/chat/completions": "openai"}


@dataclass
class RequestRecord:
    """What the gateway saw of one model request and what it did about it."""

    index: int
    endpoint: str
    model: str
    stream: bool
    message_count: int
    last_user_text: str
    served: str
    conversation: int | None = None
    bytes_sent: int = 0
    client_disconnected: bool = False
    completed: bool = False
    unexpected: bool = False
    body: dict[str, Any] | None = None
    # When (monotonic, which is one clock for every process here) the request arrived.
    received_at: float = field(default_factory=time.monotonic)
    # With a `watch` text: when (monotonic) the frame holding it was sent, when the stream
    # ended, and how many content characters were sent after it.
    watch_at: float | None = None
    ended_at: float | None = None
    chars_after_watch: int = 0

    def to_json(self) -> str:
        """This record as one JSON line (without the request body)."""
        data = asdict(self)
        data.pop("body")
        return json.dumps(data)


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text"]
    return []


def _strings(value: Any) -> list[str]:
    """Every string value in a JSON value, in order."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for item in value.values() for s in _strings(item)]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


def _user_texts(body: dict[str, Any]) -> list[str]:
    texts = []
    for message in body.get("messages", []):
        if message.get("role") == "user" and (found := "\n".join(_texts(message.get("content")))):
            texts.append(found)
    return texts


class ScriptedGateway:
    """A model gateway that answers from a scenario, for tests and the offline demo.

    Use it as an async context manager (`async with ScriptedGateway(s) as gw: gw.url`) or
    run it as `python -m wizard.testing.gateway --scenario FILE`.
    """

    def __init__(
        self,
        scenario: Scenario | str | Path | dict[str, Any],
        *,
        port: int = 0,
        refusal_marker: str = DEFAULT_GATEWAY_MARKER,
        on_record: Callable[[RequestRecord], None] | None = None,
        required_key: str | None = None,
        watch: str | None = None,
    ) -> None:
        self.scenario = scenario if isinstance(scenario, Scenario) else load_scenario(scenario)
        self.watch = watch.encode() if watch else None
        self.refusal_marker = refusal_marker
        self.required_key = required_key
        self.requests: list[RequestRecord] = []
        self._port = port
        self._cursors = [0] * len(self.scenario.conversations)
        self._server: asyncio.Server | None = None
        self._on_record = on_record
        self._connections: set[asyncio.Task[None]] = set()

    @property
    def url(self) -> str:
        """The base URL, e.g. `http://127.0.0.1:8123`."""
        if self._server is None:
            raise RuntimeError("the scripted gateway is not running")
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    async def start(self) -> ScriptedGateway:
        """Start listening on 127.0.0.1."""
        self._server = await asyncio.start_server(
            self._serve_connection, "127.0.0.1", self._port, limit=64 << 20
        )
        return self

    async def stop(self) -> None:
        """Stop listening and close open connections."""
        if self._server is not None:
            self._server.close()
            for task in list(self._connections):
                task.cancel()
            await asyncio.gather(*self._connections, return_exceptions=True)
            await self._server.wait_closed()
            self._server = None

    async def __aenter__(self) -> ScriptedGateway:
        return await self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    # --- the script -----------------------------------------------------------------------

    def unserved(self) -> list[tuple[int, int]]:
        """(conversation, response index) pairs that no request has been served yet."""
        return [
            (c, i)
            for c, conversation in enumerate(self.scenario.conversations)
            for i in range(self._cursors[c], len(conversation.responses))
        ]

    async def settled(self, timeout: float = 5.0) -> bool:
        """Wait until every request was answered in full or its client hung up."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while loop.time() < deadline:
            if all(r.completed or r.client_disconnected for r in self.requests):
                return True
            await asyncio.sleep(0.01)
        return False

    def assert_complete(self) -> None:
        """Fail unless every scripted response was served and no request was unexpected."""
        problems = []
        if left := self.unserved():
            problems.append(f"{len(left)} scripted response(s) never served: {left}")
        if extra := [r.index for r in self.requests if r.unexpected]:
            problems.append(f"unexpected request(s) past the end of the script: {extra}")
        if problems:
            raise AssertionError("; ".join(problems))

    def _next_response(self, body: dict[str, Any]) -> tuple[int | None, Response | None]:
        if self.scenario.by_history:
            return self._response_by_history(body)
        texts = _user_texts(body)
        conversation = self.scenario.route(texts[0] if texts else "")
        if conversation is None:
            return None, None
        responses = self.scenario.conversations[conversation].responses
        cursor = self._cursors[conversation]
        if cursor >= len(responses):
            return conversation, None
        self._cursors[conversation] = cursor + 1
        return conversation, responses[cursor]

    def _response_by_history(self, body: dict[str, Any]) -> tuple[int | None, Response | None]:
        """The response at the number of replies the request carries, of the conversation
        whose `match` is anywhere in its messages (tool results included)."""
        messages = body.get("messages", [])
        conversation = self.scenario.route("\n".join(_strings(messages)))
        if conversation is None:
            return None, None
        responses = self.scenario.conversations[conversation].responses
        index = sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "assistant")
        if index >= len(responses):
            return conversation, None
        self._cursors[conversation] = max(self._cursors[conversation], index + 1)
        return conversation, responses[index]

    # --- HTTP -----------------------------------------------------------------------------

    async def _serve_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        connection = HttpConnection(reader, writer)
        try:
            while (request := await connection.request()) is not None:
                if not await self._serve_request(connection, request):
                    break
        except (ConnectionError, BadRequest, asyncio.CancelledError):
            pass
        finally:
            try:
                await connection.close()
            except asyncio.CancelledError:
                # Cancelled again while closing (a client that reads nothing, then `stop`, or
                # the loop's shutdown on Ctrl-C): cut it and end, never cancelled. Python
                # 3.11 asks a connection's task for its exception without asking whether it
                # was cancelled, and prints "Exception in callback" with a traceback.
                connection.abort()
            finally:  # until closed, `stop` cancels and waits for it
                self._connections.discard(task)

    async def _serve_request(self, connection: HttpConnection, request: Request) -> bool:
        """Serve one request; return whether the connection stays usable."""
        path = request.target.split("?", 1)[0]
        endpoint = _ROUTES.get(path)
        if request.method != "POST" or endpoint is None:
            await self._send_json(connection, 404, {"error": f"no route {request.method} {path}"})
            return True
        if self.required_key is not None and not any(
            self.required_key in request.header(name) for name in ("x-api-key", "authorization")
        ):
            await self._send_json(connection, 401, {"error": {"message": "invalid api key"}})
            return True
        body = json.loads(request.body or b"{}")
        return await self._answer(connection, endpoint, body)

    async def _answer(
        self, connection: HttpConnection, endpoint: str, body: dict[str, Any]
    ) -> bool:
        conversation, response = self._next_response(body)
        texts = _user_texts(body)
        record = RequestRecord(
            index=len(self.requests),
            endpoint=endpoint,
            model=str(body.get("model", "")),
            stream=bool(body.get("stream", False)),
            message_count=len(body.get("messages", [])),
            last_user_text=texts[-1] if texts else "",
            served="",
            conversation=conversation,
            body=body,
        )
        self.requests.append(record)
        try:
            keep = await self._send_response(connection, endpoint, body, record, response)
            record.completed = not record.client_disconnected
            return keep
        finally:
            record.bytes_sent = connection.bytes_sent
            if self._on_record is not None:
                self._on_record(record)

    async def _send_response(
        self,
        connection: HttpConnection,
        endpoint: str,
        body: dict[str, Any],
        record: RequestRecord,
        response: Response | None,
    ) -> bool:
        error = wire.anthropic_error if endpoint == "anthropic" else wire.openai_error
        if response is None:
            record.unexpected = True
            record.served = "scenario exhausted"
            await self._send_json(connection, 500, error(500, "scenario exhausted"))
            return True
        if isinstance(response, ErrorResponse):
            spec = response.error
            record.served = f"error {spec.status}"
            extra = {"retry-after": f"{spec.retry_after:g}"} if spec.retry_after is not None else {}
            await self._send_json(connection, spec.status, error(spec.status, spec.body), extra)
            return True
        blocks_response = self._as_blocks(response)
        record.served = "refusal" if isinstance(response, RefusalResponse) else "blocks"
        if blocks_response.latency_ms and not await _thought(connection, blocks_response):
            record.client_disconnected = True
            return False
        if record.stream:
            return await self._stream(connection, endpoint, body, record, blocks_response)
        input_tokens = max(1, len(json.dumps(body)) // 4)
        model = record.model or "scripted"
        render = wire.anthropic_body if endpoint == "anthropic" else wire.openai_body
        await self._send_json(connection, 200, render(blocks_response.blocks, model, input_tokens))
        return True

    def _as_blocks(self, response: BlocksResponse | RefusalResponse) -> BlocksResponse:
        if isinstance(response, BlocksResponse):
            return response
        text = f"{self.refusal_marker} {response.refusal}"
        return BlocksResponse(
            blocks=[TextBlock(text=text)],
            chunk_chars=response.chunk_chars,
            delay_ms=response.delay_ms,
        )

    async def _stream(
        self,
        connection: HttpConnection,
        endpoint: str,
        body: dict[str, Any],
        record: RequestRecord,
        response: BlocksResponse,
    ) -> bool:
        input_tokens = max(1, len(json.dumps(body)) // 4)
        model = record.model or "scripted"
        if endpoint == "anthropic":
            frames = wire.anthropic_stream(
                response.blocks, model, response.chunk_chars, input_tokens
            )
        else:
            usage = bool((body.get("stream_options") or {}).get("include_usage"))
            frames = wire.openai_stream(
                response.blocks, model, response.chunk_chars, input_tokens, usage
            )
        sent_chars = 0
        try:
            await connection.respond(200, _EVENT_STREAM)
            for number, frame in enumerate(frames):
                if response.fault is not None and number == response.fault_after_frames:
                    return await self._break(connection, record, response)
                if (
                    response.drop_after_chars is not None
                    and sent_chars >= response.drop_after_chars
                ):
                    record.served += f" (dropped after {sent_chars} chars)"
                    connection.abort()
                    return False
                await connection.send(frame.data)
                sent_chars += frame.content_chars
                self._watch(record, frame)
                if response.delay_ms:
                    await asyncio.sleep(response.delay_ms / 1000)
                if connection.client_gone:
                    raise ConnectionResetError("client went away")
            await connection.end()
            return True
        except (ConnectionError, RuntimeError):
            record.client_disconnected = True
            return False
        finally:
            record.ended_at = time.monotonic()

    def _watch(self, record: RequestRecord, frame: wire.Frame) -> None:
        if self.watch is None:
            return
        if record.watch_at is not None:
            record.chars_after_watch += frame.content_chars
        elif self.watch in frame.data:
            record.watch_at = time.monotonic()

    async def _break(
        self, connection: HttpConnection, record: RequestRecord, response: BlocksResponse
    ) -> bool:
        """Play the scripted fault; return whether the connection stays usable."""
        record.served += f" ({response.fault} after {response.fault_after_frames} frames)"
        if response.fault in ("empty", "eof"):
            await connection.end()
            return False
        if response.fault == "invalid-json":
            await connection.send(b"data: {this is not json\n\n")
            await connection.reader.read()  # the client should give up on the stream now
            record.client_disconnected = True
            return False
        if response.fault == "reset":
            sock = connection.writer.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            connection.abort()
            return False
        await connection.reader.read()  # stall: nothing more, until the client hangs up
        record.client_disconnected = True
        return False

    @staticmethod
    async def _send_json(
        connection: HttpConnection,
        status: int,
        payload: dict[str, Any],
        extra_headers: dict[str, str] | None = None,
    ) -> None:
        headers = [("content-type", "application/json"), *(extra_headers or {}).items()]
        await connection.respond(status, headers, json.dumps(payload).encode())


async def _thought(connection: HttpConnection, response: BlocksResponse) -> bool:
    """Wait out the response's latency, as a model thinks; False once the client has hung up
    meanwhile (a real server sees that, and so does `settled`)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + response.latency_ms / 1000
    while (left := deadline - loop.time()) > 0:
        if connection.client_gone:
            return False
        await asyncio.sleep(min(left, 0.05))
    return True
