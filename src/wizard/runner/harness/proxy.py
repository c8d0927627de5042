"""The one edge between an engine and the model gateway: key, retries, stream integrity, idle.

Every model request an engine makes goes to this loopback proxy, which relays it to the real
gateway with httpx. Here, and only here:

- **The key.** The engine gets a per-run token; the proxy checks it and sends the real key,
  so no engine process (nor anything the agent runs) ever holds it.
- **The retry policy** (`RetryPolicy`, the only one: the engines' own retries are off).
  `429`, `500`, `502`, `503`, `504`, `529` and connection failures are retried before any byte
  of the response reached the engine, at most `max_retries` times, with exponential backoff
  and full jitter from `base_delay`, honouring `Retry-After` / `retry-after-ms` up to
  `max_delay`, within `budget` seconds per request. Each retry is announced through
  `notify`. A failure mid-stream is never retried: the engine has seen part of the reply.
- **Stream integrity.** A reply that ends without its terminator (`message_stop`; `[DONE]`
  or a `finish_reason`), a 200 with no events, an event whose data is not JSON, or a
  connection to the gateway that breaks is not a finished turn: the proxy ends the stream to
  the engine *in error*, with the protocol's own error event (`event: error` on Anthropic
  Messages, a `data: {"error": …}` chunk on OpenAI Chat), which every client raises on,
  then closes it without the closing chunk, and records the `fault`. An engine never acts
  on a truncated reply: no tool call whose arguments were cut runs.
- **The idle watchdog.** No byte from the gateway for `idle_timeout` seconds ends the
  request the same way.
- **A bound on tool arguments.** One tool call whose streamed arguments pass
  `MAX_STREAMED_TOOL_ARGS` (1.5 MiB) ends the request the same way, before the engine has to
  parse more of it (pi re-parses the partial JSON of a call with every delta). Calls over
  the fence's 1 MiB and under this bound reach the fence, which refuses them with a tool
  error the model can act on.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib
import json
import os
import random
import secrets
import ssl
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus
from types import TracebackType
from typing import Any
from urllib.parse import unquote, urlsplit

from wizard.ahead import Key, Moment, Timeline
from wizard.errors import ConfigError
from wizard.httpserver import BadRequest, HttpConnection, NotAdmitted, Request, stop_serving
from wizard.logs import logger
from wizard.runner.harness.types import CA_FIX
from wizard.runner.harness.usage import RunSpend, UsageMeter

# httpx's package imports its command-line tool whenever Click is installed (the anthropic
# extra brings it, through uvicorn): Click, Pygments and rich's syntax, 0.1 s of CPU on the
# way to the first model request, for a tool wizard never runs. A `None` in `sys.modules` is
# Python's own way to say a module is not to be imported: httpx then falls back to the `main`
# it has for a missing tool.
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
import httpx  # noqa: E402

log = logger(__name__)

_AUTH_HEADERS = ("x-api-key", "authorization")
_HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding",
     "host", "te", "trailer", "upgrade", "proxy-authorization", "proxy-connection"}
)  # fmt: skip
_CLOSE = [("connection", "close")]  # one request per connection
# The largest request the engine may send the gateway (a long conversation's history is a
# few MiB): a bigger one is refused before more of it is read.
MAX_REQUEST_BODY = 64 * 1024 * 1024


@dataclass(frozen=True)
class RetryPolicy:
    """When and how long the proxy retries a failed model request."""

    max_retries: int = 4
    base_delay: float = 1.0
    max_delay: float = 60.0
    budget: float = 120.0
    statuses: frozenset[int] = frozenset({429, 500, 502, 503, 504, 529})

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait before retry number `attempt` (0-based)."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_delay)
        return random.uniform(0, min(self.max_delay, self.base_delay * 2**attempt))


def retry_after_seconds(headers: httpx.Headers) -> float | None:
    """The wait a response asks for (`retry-after-ms`, else `retry-after` in seconds)."""
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is not None:
            with contextlib.suppress(ValueError):
                return float(value) / scale
    return None


MAX_STREAMED_TOOL_ARGS = 3 << 19  # 1.5 MiB


class StreamCheck:
    """Watches a streamed reply for its terminator, for events that are not JSON, and for a
    tool call whose arguments grow past `MAX_STREAMED_TOOL_ARGS`."""

    def __init__(
        self,
        api: str,
        max_tool_args: int = MAX_STREAMED_TOOL_ARGS,
        on_event: Callable[[dict[str, Any]], None] = lambda event: None,
    ) -> None:
        self.api = api
        self._on_event = on_event
        self.events = 0
        self.complete = False
        self._pending = b""
        self._max_tool_args = max_tool_args
        self._tool_args: dict[int, int] = {}  # a call's index → its arguments' length so far

    def feed(self, chunk: bytes) -> str | None:
        """Read more of the stream; the fault it shows, if any."""
        self._pending += chunk
        *lines, self._pending = self._pending.split(b"\n")
        for line in lines:
            if fault := self._line(line.rstrip(b"\r")):
                return fault
        return None

    def _line(self, line: bytes) -> str | None:
        if not line.startswith(b"data:"):
            return None  # other SSE fields and lines that are not fields are ignored
        data = line[5:].strip()
        self.events += 1
        if data == b"[DONE]":
            self.complete = True
            return None
        try:
            event = json.loads(data)
        except ValueError:
            return "the gateway sent an event that is not valid JSON"
        if not isinstance(event, dict):
            return None
        self._on_event(event)
        if self.api == "anthropic":
            self.complete |= event.get("type") == "message_stop"
        else:
            choices = event.get("choices") or []
            self.complete |= any(isinstance(c, dict) and c.get("finish_reason") for c in choices)
        return self._tool_args_fault(event)

    def _tool_args_fault(self, event: dict[str, Any]) -> str | None:
        for index, piece in _tool_arg_pieces(self.api, event):
            self._tool_args[index] = self._tool_args.get(index, 0) + len(piece)
            if self._tool_args[index] > self._max_tool_args:
                return (
                    f"the model sent a tool call with more than {self._max_tool_args:,} "
                    "characters of arguments"
                )
        return None

    def finish(self) -> str | None:
        """The stream ended: the fault, if it was not a complete reply."""
        if self._pending.strip() and (fault := self._line(self._pending.strip())):
            return fault
        if self.events == 0:
            return "the gateway answered 200 with no events"
        if not self.complete:
            return "the gateway closed the stream before the reply was complete"
        return None


class GatewayProxy:
    """Relays an engine's model requests to `upstream`, on 127.0.0.1."""

    def __init__(
        self,
        upstream: str,
        key: str | None,
        *,
        policy: RetryPolicy | None = None,
        idle_timeout: float = 90.0,
        notify: Callable[[str], None] = lambda message: None,
        spend: RunSpend | None = None,
        ahead: Timeline | None = None,
    ) -> None:
        self.upstream = upstream.rstrip("/")
        self._ahead = ahead or Timeline()  # the run's: its gateway client made ahead
        self._key = key
        self.policy = policy or RetryPolicy()
        self.idle_timeout = idle_timeout
        self._notify = notify
        self.token = f"wizard-run-{secrets.token_urlsafe(24)}"
        self.fault: str | None = None
        self._out_of_reach = "no answer"  # why the last attempt could not connect
        self.requests = 0
        # What the run has spent (shared by its sessions); this session's part of it.
        self.spend = spend
        self.meter = spend.meter() if spend is not None else UsageMeter()
        # Why a request was refused: the run's budget was spent (then no request goes out).
        self.over_budget: str | None = None
        # The last error the gateway answered, in its own words with what to check: the
        # run's error when the engine's request fails on it.
        self.last_error: str | None = None
        self._server: asyncio.Server | None = None
        self._client: httpx.AsyncClient | None = None
        self._client_made: asyncio.Future[None] | None = None
        # The engine's model requests relayed so far, those still being answered, and whether
        # any is (`thinking`).
        self._relayed = self._open = 0
        self._answering = asyncio.Event()

    @property
    def url(self) -> str:
        """The proxy's base URL, for the engine's config."""
        assert self._server is not None, "the proxy is not running"
        return f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    async def __aenter__(self) -> GatewayProxy:
        # A CA bundle that cannot be read ends the run here; a gateway over plain HTTP (the
        # scripted one, a local model server) needs none (and no redirect is followed).
        verify = tls_context() if self.upstream.startswith("https:") else False
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", 0, limit=64 << 20)
        self._client_made = asyncio.ensure_future(self._make_client(verify))
        return self

    async def _make_client(self, verify: ssl.SSLContext | bool) -> None:
        """The gateway's client, made once the modules imported ahead for it are (waited for
        off the loop: the engine, given the proxy's address, starts meanwhile), never at the
        same time (`client_made_ahead`); the first request waits for it."""
        await asyncio.to_thread(client_made_ahead, self._ahead)
        timeout = httpx.Timeout(connect=30.0, read=self.idle_timeout, write=60.0, pool=30.0)
        self._client = httpx.AsyncClient(timeout=timeout, trust_env=True, verify=verify)

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await stop_serving(self._server)
        if self._client_made is not None:  # never needed, or failed (a request said so)
            self._client_made.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._client_made
        if self._client is not None:
            await self._client.aclose()

    async def thinking(self, for_s: float) -> None:
        """Return once a model request has gone on for `for_s` without its reply ending (and
        no other request has begun meanwhile): the model is thinking, or still writing, and
        the machine is waiting on it."""
        while True:
            await self._answering.wait()
            relayed = self._relayed
            await asyncio.sleep(for_s)
            if self._answering.is_set() and self._relayed == relayed:
                return

    # --- one relayed request --------------------------------------------------------------

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connection = HttpConnection(reader, writer)
        try:
            try:  # the token is checked on the head, before any of the body is read
                request = await connection.request(self._authorised, MAX_REQUEST_BODY)
            except NotAdmitted as refused:
                return await connection.respond(refused.status, _CLOSE, str(refused).encode())
            if request is None:
                return
            if self._upstream_url(request.target) is None:
                return await connection.respond(400, _CLOSE, b"Bad request target")
            if self.spend is not None and (why := self.spend.exceeded()) is not None:
                return await self._refuse(connection, why)
            if self.fault is not None:  # the run has failed on it: nothing more is spent
                message = f"wizard: the run has already failed: {self.fault}"
                return await _answer_error(connection, 400, "invalid_request_error", message)
            assert self._client_made is not None
            await self._client_made
            self.meter.turns += 1
            self.meter.started()
            self._relayed += 1
            self._open += 1
            self._answering.set()
            try:
                response = await self._send(self._upstream_request(request))
                if response is None:
                    return await self._unreachable(connection)
                try:
                    await self._pipe(response, connection, _api_of(request.target))
                finally:
                    await response.aclose()
            finally:
                self.meter.ended()
                self._open -= 1
                if self._open == 0:
                    self._answering.clear()
        except (ConnectionError, BadRequest, OSError) as exc:
            log.debug("gateway proxy relay ended: %s", exc)
        finally:
            await connection.close()

    def _authorised(self, headers: list[tuple[str, str]]) -> bool:
        return any(name.lower() in _AUTH_HEADERS and self.token in value for name, value in headers)

    def _upstream_request(self, request: Request) -> httpx.Request:
        sent = []
        for name, value in request.headers:
            lowered = name.lower()
            if lowered in _HOP_BY_HOP or lowered == "accept-encoding":
                continue
            if lowered in _AUTH_HEADERS:
                if not self._key:
                    continue  # a gateway without a key gets no credentials at all
                value = value.replace(self.token, self._key)
            sent.append((name, value))
        assert self._client is not None
        url = self._upstream_url(request.target)
        assert url is not None, "checked when the request came in"
        return self._client.build_request(request.method, url, headers=sent, content=request.body)

    def _upstream_url(self, target: str) -> httpx.URL | None:
        """The gateway's URL for a request `target`: its path and query only, beneath the
        gateway's own; None for a target that is not a path (`@host:port/...` would make
        the gateway's host a user name, and send the key to that host)."""
        parts = urlsplit(target)
        if not target.startswith("/") or parts.scheme or parts.netloc:
            return None
        if {".", ".."} & set(unquote(parts.path).split("/")):
            return None  # `/v1/../../admin` would leave the gateway's path
        base = httpx.URL(self.upstream)
        url = httpx.URL(self.upstream + parts.path + (f"?{parts.query}" if parts.query else ""))
        same = (url.scheme, url.host, url.port, url.userinfo) == (
            base.scheme, base.host, base.port, base.userinfo
        )  # fmt: skip
        return url if same else None

    async def _send(self, request: httpx.Request) -> httpx.Response | None:
        """The response to relay, after the retry policy; None when the gateway is out of reach."""
        assert self._client is not None
        started, policy = time.monotonic(), self.policy
        for attempt in range(policy.max_retries + 1):
            self.requests += 1
            self.meter.requests += 1
            self.meter.retries += attempt > 0
            response: httpx.Response | None = None
            try:
                response = await self._client.send(request, stream=True)
            except httpx.TransportError as exc:
                self._out_of_reach = transport_reason(exc)  # retried quietly: not "busy"
            else:
                if response.status_code not in policy.statuses:
                    return response
            retry_after = retry_after_seconds(response.headers) if response is not None else None
            delay = policy.delay(attempt, retry_after)
            if attempt == policy.max_retries or time.monotonic() - started + delay > policy.budget:
                return response
            if response is not None:
                await response.aclose()
                status = response.status_code
                self._notify(f"gateway busy (answered {status}), retrying in {delay:.0f} s")
            await asyncio.sleep(delay)
        return None  # pragma: no cover - the loop always returns

    async def _refuse(self, connection: HttpConnection, why: str) -> None:
        """The run's budget is spent: the engine's next request is answered with an error it
        does not retry, and the run ends on it."""
        self.over_budget = self.over_budget or why
        self.meter.refused += 1
        await _answer_error(connection, 400, "invalid_request_error", f"wizard: {why}")

    async def _unreachable(self, connection: HttpConnection) -> None:
        """Out of reach after every retry: the run's error is the real reason, said once."""
        message = unreachable_message(self.upstream, self._out_of_reach)
        self.fault = self.fault or message
        await _answer_error(connection, 502, "api_error", message)

    async def _pipe(self, response: httpx.Response, connection: HttpConnection, api: str) -> None:
        """Relay the response as it comes; cut it in error at the first sign of a fault. An
        error answer is read whole (it is small), noted in the gateway's words, and relayed."""
        if response.status_code >= 400:
            body = await response.aread()
            self.last_error = gateway_error(response.status_code, body, self.upstream)
            headers = [(n, v) for n, v in response.headers.items() if n.lower() not in _HOP_BY_HOP]
            await connection.respond(response.status_code, [*headers, *_CLOSE], body)
            return
        streamed = response.headers.get("content-type", "").startswith("text/event-stream")
        check = None
        if streamed and response.status_code == 200:
            check = StreamCheck(api, on_event=lambda event: self.meter.event(api, event))
        headers = [(n, v) for n, v in response.headers.items() if n.lower() not in _HOP_BY_HOP]
        await connection.respond(response.status_code, [*headers, *_CLOSE])
        try:
            async for chunk in response.aiter_bytes():
                if check is not None and (fault := check.feed(chunk)):
                    return await self._cut(connection, fault, check)
                await connection.send(chunk)
        except httpx.ReadTimeout:
            fault = f"the gateway sent nothing for {self.idle_timeout:g} s"
            return await self._cut(connection, fault, check)
        except httpx.TransportError as exc:
            fault = f"the connection to the gateway broke ({type(exc).__name__})"
            return await self._cut(connection, fault, check)
        if check is not None and (fault := check.finish()):
            return await self._cut(connection, fault, check)
        await connection.end()

    async def _cut(self, connection: HttpConnection, fault: str, check: StreamCheck | None) -> None:
        """End the stream to the engine in error, and remember why: a stream gets the
        protocol's error event; then the connection closes without the closing chunk."""
        self.fault = self.fault or f"{fault} (gateway {self.upstream})"
        log.info("gateway stream cut: %s", self.fault)  # the run's error says it, if it counts
        if check is None:  # not a stream: a body cut short is an error to any client
            return connection.abort()
        # Blank lines first end whatever event the gateway left half-sent.
        with contextlib.suppress(ConnectionError):
            await connection.send(b"\n\n" + _error_event(check.api, self.fault))


async def _answer_error(
    connection: HttpConnection, status: int, error_type: str, message: str
) -> None:
    """Answer the engine's request with an error of wizard's own, in the shape both APIs'
    clients read."""
    payload = {"type": "error", "error": {"type": error_type, "message": message}}
    headers = [("content-type", "application/json"), *_CLOSE]
    await connection.respond(status, headers, json.dumps(payload).encode())


def _error_event(api: str, message: str) -> bytes:
    """The protocol's own error event, which the engine's client raises on."""
    if api == "anthropic":
        error = {"type": "error", "error": {"type": "api_error", "message": message}}
        return b"event: error\ndata: " + json.dumps(error).encode() + b"\n\n"
    error = {"error": {"message": message, "type": "server_error", "code": None}}
    return b"data: " + json.dumps(error).encode() + b"\n\n"


def _tool_arg_pieces(api: str, event: dict[str, Any]) -> list[tuple[int, str]]:
    """The (call index, piece of its arguments) an event streams."""
    if api == "anthropic":
        delta = event.get("delta")
        if event.get("type") == "content_block_delta" and isinstance(delta, dict):
            return [(int(event.get("index") or 0), str(delta.get("partial_json") or ""))]
        return []
    pieces = []
    for choice in event.get("choices") or []:
        calls = (choice.get("delta") or {}).get("tool_calls") if isinstance(choice, dict) else None
        for call in calls or []:
            if isinstance(call, dict):
                function = call.get("function") or {}
                pieces.append((int(call.get("index") or 0), str(function.get("arguments") or "")))
    return pieces


def transport_reason(exc: httpx.TransportError) -> str:
    """Why a connection to the gateway failed, in a user's words (the cause chain holds the
    socket's own error under httpx's "All connection attempts failed")."""
    chain: list[BaseException] = []
    cause: BaseException | None = exc
    while cause is not None and len(chain) < 8:
        chain.append(cause)
        cause = cause.__cause__ or cause.__context__
    text = " | ".join(str(error) for error in chain)
    if "CERTIFICATE_VERIFY_FAILED" in text or "certificate verify failed" in text:
        return "certificate verify failed"
    if isinstance(exc, httpx.TimeoutException):
        return "timed out"
    if any(isinstance(error, ConnectionRefusedError) for error in chain):
        return "connection refused"
    if "Name or service not known" in text or "name resolution" in text:
        return "the host name did not resolve"
    return str(exc) or type(exc).__name__


# What to check when the gateway answers an error, by its status.
_CHECK = {
    401: "Check the gateway key (WIZARD_GATEWAY_KEY, --gateway-key or the config file's "
    "[gateway] key).",
    403: "Check that the gateway key may use this model (WIZARD_GATEWAY_KEY, --gateway-key).",
    404: "Check the gateway's root URL (WIZARD_GATEWAY_URL, --gateway-url), its API "
    "(WIZARD_GATEWAY_API) and the model name (WIZARD_MODEL, --model).",
    429: "The gateway is rate-limiting this key: wait a minute, then run again.",
}


def gateway_error(status: int, body: bytes, upstream: str) -> str:
    """An error the gateway answered, said once: its status, its own message (from the
    Anthropic or OpenAI error shape, not the raw JSON), and what to check."""
    answered, check = gateway_answer(status, body)
    return f"The model gateway at {upstream} {answered}. {check}"


def gateway_answer(status: int, body: bytes) -> tuple[str, str]:
    """What the gateway answered ("answered 401 Unauthorized: invalid key"), and what to
    check for that status."""
    said = _error_message(body)
    answered = f"answered {status} {_reason_phrase(status)}".strip() + (f": {said}" if said else "")
    check = _CHECK.get(status) or (
        "The gateway failed: run again later, or check its status."
        if status >= 500
        else "The gateway refused the request as sent."
    )
    return answered, check


def _reason_phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def _error_message(body: bytes, depth: int = 0) -> str | None:
    """The message in an error body: `error.message`, `message` or `detail`, followed into a
    message that is itself an error body; else the start of the text."""
    text = body.decode(errors="replace").strip()
    try:
        data = json.loads(text)
    except ValueError:
        return " ".join(text.split())[:300] or None
    found: object = None
    if isinstance(data, dict):
        error = data.get("error")
        found = error.get("message") if isinstance(error, dict) else error
        found = found or data.get("message") or data.get("detail")
    if not isinstance(found, str):
        return " ".join(text.split())[:300] or None
    if depth < 2 and found.lstrip().startswith("{"):
        return _error_message(found.encode(), depth + 1) or found[:300]
    return found[:300]


def tls_context() -> ssl.SSLContext:
    """The TLS context httpx would make for a client (the CA bundle named by `SSL_CERT_FILE`
    or `SSL_CERT_DIR`, else certifi's), made once per process and bundle: loading a bundle
    takes 30-70 ms here, which every conversation's proxy paid."""
    cert_file, cert_dir = os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR")
    with _making_tls_context:  # one making at a time: a second caller takes the first's
        try:
            return _tls_context(cert_file, cert_dir)
        except (OSError, ssl.SSLError, ValueError) as exc:
            named = f"SSL_CERT_FILE={cert_file}" if cert_file else f"SSL_CERT_DIR={cert_dir}"
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise ConfigError(f"{named} cannot be used as a CA bundle: {why}.", CA_FIX) from exc


# What httpx imports on its client's first connection (httpcore's network backend, anyio's for
# asyncio): 50 ms of CPU here, 0.1 s on a busy machine, on the way to the first model request.
_CONNECTING_MODULES = ("sniffio", "httpcore._backends.anyio", "anyio._backends._asyncio")


# What `make_client_ahead` makes, on the run's timeline: a thread every taker waits for.
GATEWAY_CLIENT: Key[threading.Thread] = Key("the gateway client", Moment.FIRST_STAGE, shared=True)


def make_client_ahead(ahead: Timeline) -> None:
    """Make what the first proxy's client needs, in a thread of its own now, while the run
    gets ready (the engine is still starting: wizard waits for it): the TLS context (OpenSSL
    reads the bundle without Python's lock) and the modules of its first connection. A
    failure is left for the proxy, which makes the context again and reports it (a module
    that cannot be imported is imported where httpx needs it, and fails there as it would
    have); the thread is a daemon, so an exit before it ends does not wait for it. Whoever
    imports those packages next waits for it first (`client_made_ahead`)."""

    def make() -> None:
        with contextlib.suppress(Exception):
            tls_context()
        for name in _CONNECTING_MODULES:
            with contextlib.suppress(Exception):
                importlib.import_module(name)

    thread = threading.Thread(target=make, name="gateway-client", daemon=True)
    thread.start()
    ahead.start(GATEWAY_CLIENT, thread)


def client_made_ahead(ahead: Timeline) -> None:
    """Wait for what `make_client_ahead` makes, if it is being made: two threads importing
    modules of one package at once can each hold a module's lock the other waits for, and
    Python then fails one of the imports (`_DeadlockError`: a run failed so, its proxy
    importing httpcore while this thread did). Done long before, as a rule."""
    if (thread := ahead.take(GATEWAY_CLIENT)) is not None:
        thread.join()


_making_tls_context = threading.Lock()


@functools.cache
def _tls_context(cert_file: str | None, cert_dir: str | None) -> ssl.SSLContext:
    # The bundle's names are the cache's key; httpx reads them from the environment itself.
    return httpx.create_ssl_context(trust_env=True)


def ask_for_models(url: str, api: str, key: str | None) -> tuple[int | None, bytes, str | None]:
    """`GET /v1/models` at the gateway, as a run reaches it (TLS with the same trust store, the
    key in the API's header): a request that costs nothing. Its status and body, or why the
    gateway could not be reached."""
    headers = {"anthropic-version": "2023-06-01"}
    if key:
        headers |= {"x-api-key": key} if api == "anthropic-messages" else {
            "authorization": f"Bearer {key}"}  # fmt: skip
    try:
        verify = tls_context() if url.startswith("https:") else False
        with httpx.Client(timeout=5, trust_env=True, verify=verify) as client:
            response = client.get(url.rstrip("/") + "/v1/models", headers=headers)
    except httpx.TransportError as exc:
        return None, b"", transport_reason(exc)
    return response.status_code, response.content, None


def unreachable_message(upstream: str, reason: str) -> str:
    """The run's error when the gateway stayed out of reach, with the setting that fixes it."""
    return f"Could not connect to the model gateway at {upstream} ({reason}). " + (
        unreachable_fix(reason)
    )


def unreachable_fix(reason: str) -> str:
    """What to check when the gateway could not be reached for `reason`."""
    if reason == "certificate verify failed":
        return (
            "Its certificate is not trusted here: if the gateway uses a private CA, set "
            "SSL_CERT_FILE to a PEM file that holds it."
        )
    return (
        "Check WIZARD_GATEWAY_URL (or --gateway-url) and that the gateway is up and reachable "
        "from here; `wizard demo` runs offline."
    )


def _api_of(target: str) -> str:
    return "openai" if "chat/completions" in target else "anthropic"
