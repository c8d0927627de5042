"""The gateway edge: the key, the retry policy, stream integrity and the idle watchdog.

Driven by the official SDKs against the scripted gateway over real HTTP on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import ssl
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from tests.integrations import self_signed_certificate
from wizard.ahead import Timeline
from wizard.runner.harness import proxy as proxy_module
from wizard.runner.harness.proxy import GatewayProxy, RetryPolicy, StreamCheck
from wizard.testing.gateway import ScriptedGateway

USER: Any = [{"role": "user", "content": "x"}]
FAST = RetryPolicy(max_retries=4, base_delay=0.01)
TEXT = {"blocks": [{"text": "hello there, this is a reply"}], "chunk_chars": 4}


@contextlib.asynccontextmanager
async def edge(
    scenario: dict[str, Any], **options: Any
) -> AsyncIterator[tuple[ScriptedGateway, GatewayProxy]]:
    """The scripted gateway behind a keyless proxy."""
    async with (
        ScriptedGateway(scenario) as gateway,
        GatewayProxy(gateway.url, None, **options) as proxy,
    ):
        yield gateway, proxy


def _claude(proxy: GatewayProxy) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(base_url=proxy.url, api_key=proxy.token, max_retries=0)


def _gpt(proxy: GatewayProxy) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=proxy.url + "/v1", api_key=proxy.token, max_retries=0)


async def test_a_wrong_token_is_refused_and_the_real_key_is_sent() -> None:
    scenario = {"responses": [{"blocks": [{"text": "hi"}]}]}
    async with (
        ScriptedGateway(scenario, required_key="real-key") as gateway,
        GatewayProxy(gateway.url, "real-key") as proxy,
    ):
        bad = anthropic.AsyncAnthropic(base_url=proxy.url, api_key="guess", max_retries=0)
        with pytest.raises(anthropic.AuthenticationError):
            await bad.messages.create(model="m", max_tokens=5, messages=USER)
        good = _claude(proxy)
        message = await good.messages.create(model="m", max_tokens=5, messages=USER)
        await bad.close()
        await good.close()
    first = message.content[0]
    assert first.type == "text" and first.text == "hi"
    assert len(gateway.requests) == 1


async def test_the_path_prefix_and_a_chunked_body_are_relayed() -> None:
    received: list[bytes] = []

    async def upstream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = int(
            next(h for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")).split(
                b":"
            )[1]
        )
        received.append(head + await reader.readexactly(length))
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(upstream, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with GatewayProxy(f"http://127.0.0.1:{port}/base", "real-key") as proxy:
        host, proxy_port = proxy.url.removeprefix("http://").split(":")
        reader, writer = await asyncio.open_connection(host, int(proxy_port))
        writer.write(
            f"POST /v1/messages HTTP/1.1\r\nHost: x\r\nx-api-key: {proxy.token}\r\n"
            "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n".encode()
        )
        await writer.drain()
        answer = await reader.read()
        writer.close()
    server.close()
    await server.wait_closed()
    assert answer.startswith(b"HTTP/1.1 200 OK") and answer.endswith(b"2\r\nok\r\n0\r\n\r\n")
    (request,) = received
    assert request.startswith(b"POST /base/v1/messages HTTP/1.1")
    assert b"x-api-key: real-key" in request and proxy.token.encode() not in request
    assert request.endswith(b"hello")


async def test_overload_and_rate_limits_are_retried_then_succeed() -> None:
    scenario = {"responses": [
        {"error": {"status": 529, "body": "overloaded"}},
        {"error": {"status": 429, "body": "slow down", "retry_after": 0}},
        {"blocks": [{"text": "hi"}]},
    ]}  # fmt: skip
    notices: list[str] = []
    async with edge(scenario, policy=FAST, notify=notices.append) as (gateway, proxy):
        client = _claude(proxy)
        message = await client.messages.create(model="m", max_tokens=5, messages=USER)
        await client.close()
    assert message.content[0].type == "text"
    assert len(gateway.requests) == 3 and proxy.requests == 3
    assert len(notices) == 2 and notices[0].startswith("gateway busy (answered 529), retrying in")


async def test_retries_end_with_the_last_answer() -> None:
    scenario = {"responses": [{"error": {"status": 503, "body": "down"}}] * 2}
    policy = RetryPolicy(max_retries=1, base_delay=0.01)
    async with (
        ScriptedGateway(scenario) as gateway,
        GatewayProxy(gateway.url, None, policy=policy) as proxy,
    ):
        client = _claude(proxy)
        with pytest.raises(anthropic.InternalServerError, match="down"):
            await client.messages.create(model="m", max_tokens=5, messages=USER)
        await client.close()
    assert len(gateway.requests) == 2


@pytest.mark.parametrize(
    ("error", "policy"),
    [({"status": 400, "body": "bad"}, FAST), ({"status": 500, "body": "down"}, RetryPolicy(0))],
    ids=["a-bad-request", "retries-off"],
)
async def test_no_retry(error: dict[str, Any], policy: RetryPolicy) -> None:
    async with edge({"responses": [{"error": error}]}, policy=policy) as (gateway, proxy):
        client = _claude(proxy)
        with pytest.raises(anthropic.APIStatusError):
            await client.messages.create(model="m", max_tokens=5, messages=USER)
        await client.close()
    assert len(gateway.requests) == 1


async def test_an_unreachable_gateway_is_a_502_that_names_it() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}"
    policy = RetryPolicy(max_retries=2, base_delay=0.01)
    notes: list[str] = []
    async with GatewayProxy(closed, None, policy=policy, notify=notes.append) as proxy:
        client = _claude(proxy)
        with pytest.raises(anthropic.APIStatusError) as raised:
            await client.messages.create(model="m", max_tokens=5, messages=USER)
        await client.close()
    assert raised.value.status_code == 502 and closed in str(raised.value)
    assert proxy.requests == 3
    # Not "busy": retried quietly, then the real reason once, as the run's error.
    assert notes == []
    assert proxy.fault == (
        f"Could not connect to the model gateway at {closed} (connection refused). Check "
        "WIZARD_GATEWAY_URL (or --gateway-url) and that the gateway is up and reachable from "
        "here; `wizard demo` runs offline."
    )


async def test_an_untrusted_certificate_says_so_and_names_ssl_cert_file(tmp_path: Path) -> None:
    cert, key = self_signed_certificate(tmp_path)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0, ssl=context)
    url = f"https://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    try:
        policy = RetryPolicy(max_retries=0)
        async with GatewayProxy(url, "k", policy=policy) as proxy:
            client = _claude(proxy)
            with pytest.raises(anthropic.APIStatusError):
                await client.messages.create(model="m", max_tokens=5, messages=USER)
            await client.close()
    finally:
        server.close()
    assert proxy.fault is not None
    assert "(certificate verify failed)" in proxy.fault and "SSL_CERT_FILE" in proxy.fault


def test_retry_after_is_honoured_up_to_the_cap() -> None:
    policy = RetryPolicy(max_delay=60.0, base_delay=1.0)
    assert policy.delay(0, 30.0) == 30.0
    assert policy.delay(0, 600.0) == 60.0
    assert all(0 <= policy.delay(3, None) <= 8.0 for _ in range(100))


@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        ("empty", "the gateway answered 200 with no events"),
        ("eof", "the gateway closed the stream before the reply was complete"),
        ("invalid-json", "the gateway sent an event that is not valid JSON"),
        ("reset", "the connection to the gateway broke"),
    ],
)
@pytest.mark.parametrize("api", ["anthropic", "openai"])
async def test_a_broken_stream_is_cut_in_error_and_recorded(
    fault: str, reason: str, api: str
) -> None:
    after = 0 if fault == "empty" else 3
    response = {**TEXT, "fault": fault, "fault_after_frames": after}
    async with edge({"responses": [response]}) as (gateway, proxy):
        url = gateway.url
        with pytest.raises(Exception):  # noqa: B017 - each SDK raises its own transport error
            if api == "anthropic":
                client = _claude(proxy)
                async with client.messages.stream(model="m", max_tokens=5, messages=USER) as stream:
                    async for _ in stream:
                        pass
            else:
                gpt = _gpt(proxy)
                chunks = await gpt.chat.completions.create(model="m", messages=USER, stream=True)
                async for _ in chunks:
                    pass
    assert proxy.fault is not None and proxy.fault.startswith(reason), proxy.fault
    assert url in proxy.fault


@pytest.mark.parametrize("fault", ["reset", "eof", "invalid-json"])
@pytest.mark.parametrize("api", ["anthropic", "openai"])
async def test_the_engine_gets_its_protocols_error_event_naming_the_fault(
    fault: str, api: str
) -> None:
    response = {**TEXT, "fault": fault, "fault_after_frames": 3}
    async with edge({"responses": [response]}) as (_, proxy):
        if api == "anthropic":
            client = _claude(proxy)
            with pytest.raises(anthropic.APIError) as raised:
                async with client.messages.stream(model="m", max_tokens=5, messages=USER) as stream:
                    async for _ in stream:
                        pass
        else:
            gpt = _gpt(proxy)
            with pytest.raises(openai.APIError) as raised:
                chunks = await gpt.chat.completions.create(model="m", messages=USER, stream=True)
                async for _ in chunks:
                    pass
    # The SDK's own API error carrying the fault, not a transport error a client might
    # take for the end of a finished stream.
    assert not isinstance(raised.value, anthropic.APIConnectionError | openai.APIConnectionError)
    assert proxy.fault is not None and proxy.fault in str(raised.value)


@pytest.mark.parametrize("api", ["anthropic", "openai"])
async def test_after_a_cut_nothing_more_reaches_the_gateway(api: str) -> None:
    """A cut fails the run: the engine's next request (pi's context compaction, a retry) is
    answered with the fault, never sent, and the gateway's later words cannot replace it."""
    broken = {**TEXT, "fault": "reset", "fault_after_frames": 3}
    async with edge({"responses": [broken, TEXT]}) as (gateway, proxy):
        for _ in range(2):
            with pytest.raises(Exception) as raised:  # each SDK raises its own error
                if api == "anthropic":
                    client = _claude(proxy)
                    request = client.messages.stream(model="m", max_tokens=5, messages=USER)
                    async with request as stream:
                        async for _ in stream:
                            pass
                else:
                    gpt = _gpt(proxy)
                    chunks = await gpt.chat.completions.create(
                        model="m", messages=USER, stream=True
                    )
                    async for _ in chunks:
                        pass
        assert len(gateway.requests) == 1
    assert proxy.fault is not None and proxy.fault.startswith("the connection to the gateway broke")
    assert f"the run has already failed: {proxy.fault}" in str(raised.value)
    assert proxy.last_error is None and proxy.meter.turns == 1


async def test_the_idle_watchdog_cuts_a_stalled_stream() -> None:
    response = {**TEXT, "fault": "stall", "fault_after_frames": 2}
    async with (
        ScriptedGateway({"responses": [response]}) as gateway,
        GatewayProxy(gateway.url, None, idle_timeout=0.5) as proxy,
    ):
        client = _claude(proxy)
        with pytest.raises(Exception):  # noqa: B017 - the SDK's own transport error
            async with client.messages.stream(model="m", max_tokens=5, messages=USER) as stream:
                async for _ in stream:
                    pass
        await client.close()
    assert proxy.fault is not None and proxy.fault.startswith("the gateway sent nothing for 0.5 s")


@pytest.mark.parametrize("api", ["anthropic", "openai"])
async def test_a_complete_stream_is_no_fault(api: str) -> None:
    async with (
        ScriptedGateway({"responses": [TEXT]}) as gateway,
        GatewayProxy(gateway.url, None) as proxy,
    ):
        if api == "anthropic":
            client = _claude(proxy)
            async with client.messages.stream(model="m", max_tokens=5, messages=USER) as stream:
                text = await stream.get_final_text()
        else:
            gpt = _gpt(proxy)
            chunks = await gpt.chat.completions.create(model="m", messages=USER, stream=True)
            text = "".join([c.choices[0].delta.content or "" async for c in chunks if c.choices])
    assert text == "hello there, this is a reply"
    assert proxy.fault is None


async def test_the_model_is_thinking_once_a_request_goes_on_unanswered() -> None:
    """`thinking` returns once a request has gone on for its time without its reply ending:
    not for a reply that came sooner, nor before any request; while the slow one is still
    being answered."""
    slow = {**TEXT, "latency_ms": 1500}
    async with edge({"responses": [TEXT, slow]}) as (_, proxy):
        client = _claude(proxy)
        thinking = asyncio.ensure_future(proxy.thinking(0.2))
        await asyncio.sleep(0.3)
        await client.messages.create(model="m", max_tokens=5, messages=USER)  # at once
        await asyncio.sleep(0.3)
        assert not thinking.done()
        answer = asyncio.ensure_future(client.messages.create(model="m", max_tokens=5,
                                                              messages=USER))  # fmt: skip
        await asyncio.wait_for(thinking, 2)
        assert not answer.done()  # the reply is still coming
        await answer
        await client.close()


def test_sse_lines_that_are_not_fields_are_ignored() -> None:
    check = StreamCheck("openai")
    assert check.feed(b": keep-alive comment\nnonsense line\n\n") is None
    assert check.feed(b'data: {"choices": [{"finish_reason": "stop"}]}\n\n') is None
    assert check.finish() is None


@pytest.mark.parametrize("api", ["anthropic", "openai"])
def test_a_tool_call_whose_arguments_pass_the_bound_is_a_fault(api: str) -> None:
    def piece(index: int, text: str) -> bytes:
        if api == "anthropic":
            event = {"type": "content_block_delta", "index": index,
                     "delta": {"type": "input_json_delta", "partial_json": text}}  # fmt: skip
        else:
            call = {"index": index, "function": {"arguments": text}}
            event = {"choices": [{"delta": {"tool_calls": [call]}}]}
        return f"data: {json.dumps(event)}\n\n".encode()

    check = StreamCheck(api, max_tool_args=100)
    for index in (0, 1):  # two calls of 90 characters each: each under the bound
        assert check.feed(piece(index, "x" * 60)) is None
        assert check.feed(piece(index, "x" * 30)) is None
    fault = check.feed(piece(1, "x" * 20))
    assert fault is not None and "more than 100 characters of arguments" in fault


@pytest.mark.parametrize("target", ["@127.0.0.1:{port}/v1/messages", "//127.0.0.1:{port}/v1/x",
                                    "http://127.0.0.1:{port}/v1/messages"])  # fmt: skip
async def test_a_request_target_that_is_not_a_path_never_sends_the_key_elsewhere(
    target: str,
) -> None:
    """The upstream URL was the gateway's plus the target: `@host:port/...` made the
    gateway's host a user name, and the key went to that host."""
    seen: list[bytes] = []

    async def elsewhere(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(await reader.read(65536))
        writer.close()

    server = await asyncio.start_server(elsewhere, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    scenario = {"responses": [{"blocks": [{"text": "hi"}]}]}
    async with (
        ScriptedGateway(scenario, required_key="real-key") as gateway,
        GatewayProxy(gateway.url, "real-key") as proxy,
    ):
        reader, writer = await asyncio.open_connection(
            "127.0.0.1", int(proxy.url.rsplit(":", 1)[1])
        )
        request = (f"POST {target.format(port=port)} HTTP/1.1\r\nhost: x\r\n"
                   f"x-api-key: {proxy.token}\r\ncontent-length: 2\r\n\r\n{{}}")  # fmt: skip
        writer.write(request.encode())
        await writer.drain()
        answer = await reader.read(65536)
        writer.close()
    server.close()
    await server.wait_closed()
    assert answer.startswith(b"HTTP/1.1 400"), answer
    assert seen == [] and gateway.requests == []


@pytest.mark.parametrize(
    ("status", "body", "said"),
    [
        (401, b'{"type":"error","error":{"type":"authentication_error",'
              b'"message":"invalid x-api-key"}}',
         "answered 401 Unauthorized: invalid x-api-key. Check the gateway key (WIZARD_GATEWAY_KEY"),
        (404, b'{"error":{"message":"model not found","type":"invalid_request_error"}}',
         "answered 404 Not Found: model not found. Check the gateway's root URL"),
        (400, b'{"error": {"message": "{\\"error\\": {\\"message\\": \\"prompt too long\\"}}"}}',
         "answered 400 Bad Request: prompt too long. The gateway refused the request as sent."),
        (503, b"<html>  upstream\n down </html>",
         "answered 503 Service Unavailable: <html> upstream down </html>. The gateway failed"),
    ],
)  # fmt: skip
def test_a_gateway_error_is_said_in_its_own_words_once(status: int, body: bytes, said: str) -> None:
    """Not the raw JSON (nested as some gateways nest it), and one hint for the status."""
    from wizard.runner.harness.proxy import gateway_error

    message = gateway_error(status, body, "https://gw.example")
    assert message.startswith("The model gateway at https://gw.example ") and said in message
    assert "{" not in message.replace("<html>", "")


async def test_an_error_answer_is_relayed_and_noted() -> None:
    body = '{"type":"error","error":{"type":"authentication_error","message":"bad key"}}'
    async with edge({"responses": [{"error": {"status": 401, "body": body}}]}) as (_, proxy):
        client = _claude(proxy)
        with pytest.raises(anthropic.AuthenticationError):
            await client.messages.create(model="m", max_tokens=5, messages=USER)
        await client.close()
    assert proxy.last_error is not None and "401 Unauthorized: bad key" in proxy.last_error


def test_the_proxy_loads_httpx_without_its_command_line_tool() -> None:
    """httpx imports its CLI (Click, Pygments) whenever Click is installed; the proxy keeps
    it out of a run's way to its first request, and httpx still works (the relays above)."""
    import importlib.util
    import subprocess
    import sys

    if importlib.util.find_spec("click") is None:
        pytest.skip("without Click, httpx never imports its tool")
    probe = (
        "import sys, wizard.runner.harness.proxy, httpx\n"
        "print(sorted({'click', 'pygments'} & set(sys.modules)), callable(httpx.main))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True)  # fmt: skip
    assert done.stdout.split() == ["[]", "True"], done.stdout + done.stderr


_FIRST_CONNECTION = """
import asyncio, sys, threading
from wizard.ahead import Timeline
from wizard.runner.harness import proxy
if sys.argv[1] == "ahead":
    ahead = Timeline()
    proxy.make_client_ahead(ahead)
    proxy.client_made_ahead(ahead)

async def answer(reader, writer):
    await reader.readuntil(b"\\r\\n\\r\\n")
    writer.write(b"HTTP/1.1 200 OK\\r\\ncontent-length: 2\\r\\n\\r\\nok")
    await writer.drain()
    writer.close()

async def main():
    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    before = set(sys.modules)
    async with proxy.httpx.AsyncClient() as client:
        response = await client.get(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/")
    print(response.status_code, " ".join(sorted(set(sys.modules) - before)))

asyncio.run(main())
"""


def test_the_client_made_ahead_imports_nothing_on_its_first_connection() -> None:
    """What httpx imports on a client's first connection (its network backend) is imported
    while the run gets ready (`make_client_ahead`), not on the way to the first model
    request; without it, the first connection imports it (so a new httpx or anyio that
    moves it elsewhere fails here)."""
    import subprocess
    import sys

    def first_connection(*how: str) -> list[str]:
        done = subprocess.run([sys.executable, "-c", _FIRST_CONNECTION, *how],
                              capture_output=True, text=True, check=True)  # fmt: skip
        status, *imported = done.stdout.split()
        assert status == "200", done.stdout + done.stderr
        return imported

    assert "anyio._backends._asyncio" in first_connection("cold")
    assert first_connection("ahead") == []


def test_the_tls_context_made_ahead_is_the_one_the_proxy_takes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`make_client_ahead` loads the CA bundle in a thread of its own while the run gets
    ready; the proxy, asking while it is still being made, takes that one: made once."""
    made: list[str] = []
    entered, allowed = threading.Event(), threading.Event()

    def create(**_: object) -> ssl.SSLContext:
        entered.set()
        allowed.wait()
        made.append(threading.current_thread().name)
        return ssl.create_default_context()

    monkeypatch.setattr(proxy_module.httpx, "create_ssl_context", create)
    proxy_module._tls_context.cache_clear()
    ahead = Timeline()
    try:
        proxy_module.make_client_ahead(ahead)
        entered.wait()
        threading.Timer(0.05, allowed.set).start()  # once the proxy below waits for it
        context = proxy_module.tls_context()
        assert proxy_module.tls_context() is context
        assert made == ["gateway-client"]
    finally:
        allowed.set()
        proxy_module.client_made_ahead(ahead)
        proxy_module._tls_context.cache_clear()


async def test_a_proxy_makes_its_client_once_the_modules_imported_ahead_are(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two threads importing httpcore at once can each hold a module's lock the other waits
    for: Python then failed the proxy's import (`_DeadlockError`, a run that failed
    unexpectedly). The proxy is up at once (the engine starts with its address), and makes
    its client once the imports made ahead have ended; its first request waits for that."""
    order: list[str] = []
    importing, allowed = threading.Event(), threading.Event()

    class Slow:
        def import_module(self, name: str) -> None:
            importing.set()
            allowed.wait(30)  # a guard against a hang, not a timing
            order.append(f"imported {name}")

    real_client = proxy_module.httpx.AsyncClient

    def client(**options: Any) -> Any:
        order.append("client")
        return real_client(**options)

    async def upstream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
        await writer.drain()
        writer.close()

    monkeypatch.setattr(proxy_module, "importlib", Slow())
    monkeypatch.setattr(proxy_module.httpx, "AsyncClient", client)
    monkeypatch.setattr(proxy_module, "_CONNECTING_MODULES", ("httpcore",))
    server = await asyncio.start_server(upstream, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    ahead = Timeline()
    try:
        proxy_module.make_client_ahead(ahead)
        await asyncio.to_thread(importing.wait)
        async with GatewayProxy(f"http://127.0.0.1:{port}", "key", ahead=ahead) as proxy:
            assert order == []  # up while the imports go on
            host, proxy_port = proxy.url.removeprefix("http://").split(":")
            reader, writer = await asyncio.open_connection(host, int(proxy_port))
            writer.write(f"GET /v1/models HTTP/1.1\r\nHost: x\r\nx-api-key: {proxy.token}"
                         "\r\ncontent-length: 0\r\n\r\n".encode())  # fmt: skip
            await writer.drain()
            threading.Timer(0.1, allowed.set).start()  # once the request waits for it
            answer = await reader.read()
            writer.close()
    finally:
        allowed.set()
        proxy_module.client_made_ahead(ahead)
        server.close()
        await server.wait_closed()
    assert answer.startswith(b"HTTP/1.1 200 OK")
    assert order == ["imported httpcore", "client"]


async def _raw(proxy: GatewayProxy, head: str, body: bytes = b"") -> bytes:
    """What the proxy answers one raw request (its head, then `body`)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", int(proxy.url.rsplit(":", 1)[1]))
    writer.write(head.encode() + body)
    with contextlib.suppress(ConnectionError):
        await writer.drain()
    answer = await reader.read(65536)
    writer.close()
    return answer


@pytest.mark.parametrize("path", ["/v1/../../admin", "/v1/%2e%2e/secret", "/v1/./messages"])
async def test_a_target_that_climbs_out_of_the_gateways_path_is_refused(path: str) -> None:
    scenario = {"responses": [{"blocks": [{"text": "hi"}]}]}
    async with (
        ScriptedGateway(scenario, required_key="real-key") as gateway,
        GatewayProxy(gateway.url + "/v1", "real-key") as proxy,
    ):
        head = f"POST {path} HTTP/1.1\r\nhost: x\r\nx-api-key: {proxy.token}\r\n"
        answer = await _raw(proxy, head + "content-length: 2\r\n\r\n", b"{}")
    assert answer.startswith(b"HTTP/1.1 400"), answer
    assert gateway.requests == []


async def test_the_token_is_checked_before_the_body_and_a_huge_body_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without the token, the proxy answers 401 on the head: a 400 MB body was read first.
    With it, a body over the bound is refused once it passes it."""
    from wizard.runner.harness import proxy as proxy_module

    monkeypatch.setattr(proxy_module, "MAX_REQUEST_BODY", 1024)
    scenario = {"responses": [{"blocks": [{"text": "hi"}]}]}
    async with (
        ScriptedGateway(scenario, required_key="real-key") as gateway,
        GatewayProxy(gateway.url, "real-key") as proxy,
    ):
        head = "POST /v1/messages HTTP/1.1\r\nhost: x\r\ncontent-length: 400000000\r\n"
        unauthorised = await _raw(proxy, head + "\r\n", b"x" * 10)  # the body never comes
        too_big = await _raw(proxy, head + f"x-api-key: {proxy.token}\r\n\r\n", b"x" * 4096)
    assert unauthorised.startswith(b"HTTP/1.1 401"), unauthorised
    assert too_big.startswith(b"HTTP/1.1 413"), too_big
    assert gateway.requests == []
