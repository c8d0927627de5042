"""The scripted gateway, driven by the official `anthropic` and `openai` SDKs as clients."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from wizard.errors import ConfigError
from wizard.testing.gateway import ScriptedGateway, load_scenario

TOOL = {"tool_call": {"name": "bash", "arguments": {"command": "ls -la"}}}
ANTHROPIC_TOOLS: list[Any] = [
    {"name": "bash", "description": "run", "input_schema": {"type": "object", "properties": {}}}
]
OPENAI_TOOLS: list[Any] = [
    {"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}
]


_OPEN: list[anthropic.AsyncAnthropic | openai.AsyncOpenAI] = []


@pytest.fixture(autouse=True)
async def _close_clients() -> AsyncIterator[None]:
    yield
    while _OPEN:
        await _OPEN.pop().close()


def _anthropic(gw: ScriptedGateway) -> anthropic.AsyncAnthropic:
    client = anthropic.AsyncAnthropic(base_url=gw.url, api_key="k", max_retries=0)
    _OPEN.append(client)
    return client


def _openai(gw: ScriptedGateway) -> openai.AsyncOpenAI:
    client = openai.AsyncOpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0)
    _OPEN.append(client)
    return client


def _user(text: str) -> list[Any]:
    return [{"role": "user", "content": text}]


async def test_anthropic_not_streamed_text_thinking_and_tool_call() -> None:
    scenario = {
        "responses": [
            {"blocks": [{"thinking": "hmm"}, {"text": "Before."}, TOOL, {"text": "After."}]}
        ]
    }
    async with ScriptedGateway(scenario) as gw:
        message = await _anthropic(gw).messages.create(
            model="m-1", max_tokens=100, messages=_user("hi"), tools=ANTHROPIC_TOOLS
        )
        gw.assert_complete()
    kinds = [block.type for block in message.content]
    assert kinds == ["thinking", "text", "tool_use", "text"]
    assert message.stop_reason == "tool_use"
    tool = message.content[2]
    assert tool.type == "tool_use" and tool.input == {"command": "ls -la"}
    record = gw.requests[0]
    assert (record.endpoint, record.model, record.stream) == ("anthropic", "m-1", False)
    assert record.last_user_text == "hi" and record.message_count == 1


async def test_anthropic_streamed_keeps_blocks_apart() -> None:
    scenario = {
        "responses": [
            {"blocks": [{"text": "Before tool. "}, TOOL, {"text": "After tool."}], "chunk_chars": 3}
        ]
    }
    async with (
        ScriptedGateway(scenario) as gw,
        _anthropic(gw).messages.stream(
            model="m", max_tokens=100, messages=_user("go"), tools=ANTHROPIC_TOOLS
        ) as stream,
    ):
        deltas = [
            e.delta.text
            async for e in stream
            if e.type == "content_block_delta" and e.delta.type == "text_delta"
        ]
        message = await stream.get_final_message()
    assert "".join(deltas) == "Before tool. After tool."
    assert len(deltas) > 4
    assert [b.type for b in message.content] == ["text", "tool_use", "text"]
    assert gw.requests[0].stream and not gw.requests[0].client_disconnected


async def test_openai_not_streamed_merges_text_around_tool_calls() -> None:
    scenario = {"responses": [{"blocks": [{"text": "Before. "}, TOOL, {"text": "After."}]}]}
    async with ScriptedGateway(scenario) as gw:
        completion = await _openai(gw).chat.completions.create(
            model="gpt-x", messages=_user("hi"), tools=OPENAI_TOOLS
        )
    choice = completion.choices[0]
    assert choice.message.content == "Before. After."
    assert choice.finish_reason == "tool_calls"
    calls = choice.message.tool_calls or []
    assert calls[0].type == "function"
    assert json.loads(calls[0].function.arguments) == {"command": "ls -la"}
    assert gw.requests[0].endpoint == "openai"


async def test_openai_streamed_with_usage() -> None:
    scenario = {"responses": [{"blocks": [{"text": "Hello from the script."}, TOOL]}]}
    async with ScriptedGateway(scenario) as gw:
        stream = await _openai(gw).chat.completions.create(
            model="gpt-x",
            messages=_user("hi"),
            tools=OPENAI_TOOLS,
            stream=True,
            stream_options={"include_usage": True},
        )
        text, args, finish, usage = "", "", None, None
        async for chunk in stream:
            if chunk.usage:
                usage = chunk.usage
            for choice in chunk.choices:
                text += choice.delta.content or ""
                for call in choice.delta.tool_calls or []:
                    args += (call.function.arguments or "") if call.function else ""
                finish = choice.finish_reason or finish
    assert text == "Hello from the script."
    assert json.loads(args) == {"command": "ls -la"}
    assert finish == "tool_calls"
    assert usage is not None and usage.completion_tokens > 0


async def test_refusal_carries_the_marker() -> None:
    async with ScriptedGateway(
        {"responses": [{"refusal": "policy says no"}, {"refusal": "again"}]}
    ) as gw:
        message = await _anthropic(gw).messages.create(
            model="m", max_tokens=10, messages=_user("x")
        )
        completion = await _openai(gw).chat.completions.create(model="m", messages=_user("x"))
    first = message.content[0]
    assert first.type == "text" and first.text == "[posthog:abort] policy says no"
    assert completion.choices[0].message.content == "[posthog:abort] again"
    assert [r.served for r in gw.requests] == ["refusal", "refusal"]


async def test_refusal_marker_is_per_gateway() -> None:
    async with ScriptedGateway(
        {"responses": [{"refusal": "no"}]}, refusal_marker="[acme:refuse]"
    ) as gw:
        message = await _anthropic(gw).messages.create(
            model="m", max_tokens=10, messages=_user("x")
        )
    first = message.content[0]
    assert first.type == "text" and first.text == "[acme:refuse] no"


async def test_errors_reach_both_sdks_as_their_own_exceptions() -> None:
    scenario = {
        "responses": [
            {"error": {"status": 429, "body": "slow down", "retry_after": 1}},
            {"error": {"status": 500, "body": "boom"}},
        ]
    }
    async with ScriptedGateway(scenario) as gw:
        with pytest.raises(anthropic.RateLimitError) as limited:
            await _anthropic(gw).messages.create(model="m", max_tokens=10, messages=_user("x"))
        with pytest.raises(openai.InternalServerError) as broken:
            await _openai(gw).chat.completions.create(model="m", messages=_user("x"))
    assert "slow down" in str(limited.value)
    assert limited.value.response.headers["retry-after"] == "1"
    assert "boom" in str(broken.value)


@pytest.mark.parametrize("endpoint", ["anthropic", "openai"])
async def test_drop_mid_stream_is_a_broken_stream(endpoint: str) -> None:
    long_text = "x" * 200
    scenario = {
        "responses": [{"blocks": [{"text": long_text}], "chunk_chars": 10, "drop_after_chars": 50}]
    }
    async with ScriptedGateway(scenario) as gw:
        received = ""
        with pytest.raises((anthropic.APIError, openai.APIError, Exception)) as raised:
            if endpoint == "anthropic":
                async with _anthropic(gw).messages.stream(
                    model="m", max_tokens=10, messages=_user("x")
                ) as stream:
                    async for text in stream.text_stream:
                        received += text
            else:
                chunks = await _openai(gw).chat.completions.create(
                    model="m", messages=_user("x"), stream=True
                )
                async for chunk in chunks:
                    received += chunk.choices[0].delta.content or "" if chunk.choices else ""
    assert 0 < len(received) <= 60
    assert raised.value is not None
    assert "dropped after 50 chars" in gw.requests[0].served


async def test_exhausted_script_is_500_and_recorded_unexpected() -> None:
    async with ScriptedGateway({"responses": [{"blocks": [{"text": "only one"}]}]}) as gw:
        await _anthropic(gw).messages.create(model="m", max_tokens=10, messages=_user("x"))
        with pytest.raises(anthropic.InternalServerError, match="scenario exhausted"):
            await _anthropic(gw).messages.create(model="m", max_tokens=10, messages=_user("y"))
        assert gw.requests[1].unexpected
        with pytest.raises(AssertionError, match="unexpected request"):
            gw.assert_complete()


async def test_a_head_request_is_answered_without_a_body_and_the_connection_goes_on() -> None:
    """The Claude CLI checks its base URL with HEAD before its first request: the answer has
    the GET's headers and no body, and the same connection answers the next request."""
    async with ScriptedGateway({"responses": []}) as gw:
        host, port = gw.url.removeprefix("http://").split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(b"HEAD / HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n")
        await writer.drain()
        answers = b""
        while answers.count(b"HTTP/1.1 404") < 2 and (data := await reader.read(4096)):
            answers += data
        writer.close()
        head, get = answers.split(b"HTTP/1.1 404")[1:]
        assert head.endswith(b"\r\n\r\n"), "HEAD's answer carried a body"
        assert get.endswith(b'{"error": "no route GET /"}')


async def test_assert_complete_fails_on_unserved_responses() -> None:
    async with ScriptedGateway(
        {"responses": [{"blocks": [{"text": "a"}]}, {"blocks": [{"text": "b"}]}]}
    ) as gw:
        await _openai(gw).chat.completions.create(model="m", messages=_user("x"))
        with pytest.raises(AssertionError, match="1 scripted response"):
            gw.assert_complete()


async def test_conversations_route_by_first_user_message() -> None:
    scenario = {
        "conversations": [
            {
                "match": "task A",
                "responses": [{"blocks": [{"text": "A1"}]}, {"blocks": [{"text": "A2"}]}],
            },
            {"match": "task B", "responses": [{"blocks": [{"text": "B1"}]}]},
        ]
    }
    async with ScriptedGateway(scenario) as gw:
        client = _anthropic(gw)

        async def ask(messages: list[Any]) -> str:
            message = await client.messages.create(model="m", max_tokens=10, messages=messages)
            block = message.content[0]
            return block.text if block.type == "text" else ""

        b1, a1 = await asyncio.gather(ask(_user("do task B")), ask(_user("do task A")))
        a2 = await ask(
            [
                *_user("do task A"),
                {"role": "assistant", "content": "A1"},
                {"role": "user", "content": "more"},
            ]
        )
        gw.assert_complete()
    assert (a1, a2, b1) == ("A1", "A2", "B1")
    assert {r.conversation for r in gw.requests} == {0, 1}
    assert gw.requests[-1].last_user_text == "more" and gw.requests[-1].message_count == 3


async def test_slow_tail_sees_the_client_leave() -> None:
    scenario = {
        "responses": [
            {
                "blocks": [{"text": "[ABORT] stop now\n" + "tail " * 400}],
                "chunk_chars": 8,
                "delay_ms": 5,
            }
        ]
    }
    async with ScriptedGateway(scenario) as gw:
        async with _anthropic(gw).messages.stream(
            model="m", max_tokens=10, messages=_user("x")
        ) as stream:
            seen = ""
            async for text in stream.text_stream:
                seen += text
                if "stop now\n" in seen:
                    break
        for _ in range(200):
            if gw.requests[0].client_disconnected:
                break
            await asyncio.sleep(0.01)
    record = gw.requests[0]
    assert record.client_disconnected
    assert record.bytes_sent < 20_000


async def test_a_client_that_leaves_while_the_model_thinks_is_seen_leaving() -> None:
    """A request cancelled during its response's latency (an engine killed while the model
    thinks) is settled at once, not when the latency is over."""
    scenario = {"responses": [{"blocks": [{"text": "Late."}], "latency_ms": 60_000}]}
    async with ScriptedGateway(scenario) as gw:
        asking = asyncio.ensure_future(
            _anthropic(gw).messages.create(model="m", max_tokens=10, messages=_user("x"))
        )
        while not gw.requests:
            await asyncio.sleep(0.01)
        asking.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asking
        assert await gw.settled(timeout=2)
    assert gw.requests[0].client_disconnected


async def test_a_connection_cancelled_while_it_closes_ends_without_an_exception() -> None:
    """A client that reads nothing holds the connection's close (its reply cannot drain); a
    second cancel then (`stop`, or the loop's shutdown when the demo gets Ctrl-C) ends the
    connection's task normally: on Python 3.11 a cancelled one printed "Exception in
    callback" and a traceback under the cancelled screen."""
    said: list[dict[str, Any]] = []
    asyncio.get_running_loop().set_exception_handler(lambda _, context: said.append(context))
    scenario = {"responses": [{"blocks": [{"text": "x" * 4_000_000}]}]}
    async with ScriptedGateway(scenario) as gw:
        host, port = gw.url.removeprefix("http://").split(":")
        _, writer = await asyncio.open_connection(host, int(port))
        body = json.dumps({"model": "m", "max_tokens": 10, "stream": True,
                           "messages": _user("x")}).encode()  # fmt: skip
        writer.write(b"POST /v1/messages HTTP/1.1\r\nHost: g\r\nContent-Type: application/json"
                     b"\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))  # fmt: skip
        await writer.drain()
        while not gw.requests:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.2)  # its reply fills the socket's buffers, and waits
        (task,) = gw._connections
        for _ in range(2):  # out of the reply, then out of the close
            task.cancel()
            await asyncio.sleep(0.1)
        assert task.done() and not task.cancelled()
        writer.close()
    assert said == []


def test_malformed_scenario_is_a_config_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"responses": [{"nonsense": 1}]}))
    with pytest.raises(ConfigError, match="needs 'blocks', 'refusal' or 'error'"):
        load_scenario(bad)
    yaml_file = tmp_path / "ok.yaml"
    yaml_file.write_text("responses:\n  - blocks:\n      - text: hi\n")
    assert len(load_scenario(yaml_file).conversations[0].responses) == 1


def test_standalone_process_prints_ready_logs_and_stops_on_sigterm(tmp_path: Path) -> None:
    scenario = tmp_path / "s.json"
    scenario.write_text(json.dumps({"responses": [{"blocks": [{"text": "hello"}]}]}))
    log = tmp_path / "requests.jsonl"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "wizard.testing.gateway",
            "--scenario",
            str(scenario),
            "--log",
            str(log),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("READY http://127.0.0.1:")
        url = line.split()[1]
        client = anthropic.Anthropic(base_url=url, api_key="k", max_retries=0)
        message = client.messages.create(model="m", max_tokens=10, messages=_user("hey"))
        first = message.content[0]
        assert first.type == "text" and first.text == "hello"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    entries = [json.loads(x) for x in log.read_text().splitlines()]
    assert entries[0]["last_user_text"] == "hey" and entries[0]["served"] == "blocks"


async def test_by_history_answers_each_run_from_its_own_history() -> None:
    """Runs of many repositories share one gateway: each request gets the response at the
    number of replies it carries, of the conversation whose token its tool results show; a
    run started over gets its script from the start."""
    opening = {"blocks": [{"text": "read SOURCE.md"}]}
    scenario = {
        "by_history": True,
        "conversations": [
            {"match": "token-a", "responses": [opening, {"blocks": [{"text": "A done"}]}]},
            {"match": "token-b", "responses": [opening, {"blocks": [{"text": "B done"}]}]},
            {"responses": [opening]},
        ],
    }

    def second(token: str) -> list[Any]:
        return [*_user("prompt"), {"role": "assistant", "content": "read SOURCE.md"},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                              "content": f"source {token}"}]}]  # fmt: skip

    async with ScriptedGateway(scenario) as gw:
        client = _anthropic(gw)

        async def ask(messages: list[Any]) -> str:
            message = await client.messages.create(model="m", max_tokens=10, messages=messages)
            block = message.content[0]
            assert block.type == "text"
            return block.text

        assert await ask(_user("prompt")) == "read SOURCE.md"
        assert await ask(second("token-b")) == "B done"
        assert await ask(second("token-a")) == "A done"
        assert await ask(_user("prompt")) == "read SOURCE.md"  # run A started over
        assert await ask(second("token-a")) == "A done"
        gw.assert_complete()
        assert [r.conversation for r in gw.requests] == [2, 1, 0, 2, 0]
