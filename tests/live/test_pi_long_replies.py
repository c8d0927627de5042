"""Long replies and large writes on the real pi engine, through wizard's pi host.

pi's RPC mode wrote the whole message so far with every delta, so these runs crashed it
(ENOBUFS, or V8 out of heap). The host's protocol carries each delta once and each message
once: the volume wizard reads stays linear in the reply's length.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.live.conftest import run_live
from wizard.outcome import AgentErrorType
from wizard.runner.harness.pi.session import PiSession
from wizard.testing.script import call

pytestmark = pytest.mark.live

APIS = ["anthropic-messages", "openai-completions"]
DONE = [{"blocks": [{"text": "Done."}]}, {"blocks": [{"text": "[WIZARD-REMARK] -"}]}]
NEVER = {"blocks": [{"text": "this response must never be requested"}]}
# Per event, the protocol adds its envelope (type, index, quotes): well under this.
ENVELOPE_BYTES = 96


def prose(chars: int) -> str:
    """`chars` characters of text in lines, holding no marker."""
    line = "The agent explains what it is about to change, at length. " * 2 + "\n"
    return (line * (chars // len(line) + 1))[:chars]


def watch_events(session: PiSession, events: list[dict[str, Any]]) -> None:
    session.subscribe(events.append)


@pytest.mark.parametrize("api", APIS)
async def test_a_200k_reply_in_4_char_deltas_finishes_with_linear_volume(
    tmp_path: Path, api: Any
) -> None:
    reply = prose(200_000)
    scenario = {
        "responses": [
            {
                "blocks": [{"text": reply}, call("write", path="notes.txt", content="ok")],
                "chunk_chars": 4,
            },
            *DONE,
        ]
    }
    events: list[dict[str, Any]] = []
    live = await run_live(tmp_path, scenario, api=api, on_start=lambda s: watch_events(s, events))
    assert live.result.ok, live.result
    assert (tmp_path / "notes.txt").read_text() == "ok"
    streamed = "".join(e["delta"] for e in events if e["type"] == "text_delta")
    assert streamed.startswith(reply)
    (session,) = live.sessions
    # Linear: the deltas once, the final message once, an envelope per line.
    assert session.bytes_read <= 2 * len(reply) + ENVELOPE_BYTES * session.lines_read + 65_536
    live.assert_no_process_left()


@pytest.mark.parametrize("api", APIS)
async def test_the_protocol_never_carries_a_partial_message(tmp_path: Path, api: Any) -> None:
    scenario = {
        "responses": [
            {
                "blocks": [
                    {"thinking": "weighing it up " * 500},
                    {"text": prose(20000)},
                    call("write", path="big.txt", content="x" * 50000),
                ],
                "chunk_chars": 16,
            },
            *DONE,
        ]
    }
    events: list[dict[str, Any]] = []
    live = await run_live(tmp_path, scenario, api=api, on_start=lambda s: watch_events(s, events))
    assert live.result.ok, live.result
    for event in events:
        assert not {"partial", "message", "messages", "assistantMessageEvent"} & set(event)
        size = len(json.dumps(event))
        if event["type"] == "text_delta":
            assert size <= len(json.dumps(event["delta"])) + ENVELOPE_BYTES
        elif event["type"] != "message_end":
            assert size < 2_000, f"{event['type']} carries {size} bytes"
    # Tool-call arguments are never relayed: the 50 kB file is only in the tool's preview.
    assert sum(len(json.dumps(e)) for e in events) < 2 * 20_000 + 200 * len(events)


@pytest.mark.parametrize("api", APIS)
async def test_a_150kb_file_written_in_128_char_pieces(tmp_path: Path, api: Any) -> None:
    """1,200 pieces: the host carries the call's arguments once, at its end. (In 16-char
    pieces a run took a minute here, nearly all of it pi parsing the partial arguments again
    at every piece, which nothing of wizard's changes.)"""
    content = "".join(f"line {n}: some generated configuration\n" for n in range(4_000))
    assert len(content) > 150_000
    scenario = {
        "responses": [
            {"blocks": [call("write", path="generated.txt", content=content)], "chunk_chars": 128}
        ]
    }
    live = await run_live(tmp_path, {"responses": scenario["responses"] + DONE}, api=api)
    assert live.result.ok, live.result
    assert (tmp_path / "generated.txt").read_text() == content
    live.assert_no_process_left()


@pytest.mark.parametrize("api", APIS)
async def test_a_marker_after_100k_chars_stops_with_its_reason(tmp_path: Path, api: Any) -> None:
    text = prose(100_000) + "[ABORT] the api is not enabled for this project\n" + prose(20_000)
    scenario = {"responses": [{"blocks": [{"text": text}], "chunk_chars": 4}, NEVER]}
    live = await run_live(tmp_path, scenario, api=api)
    assert (live.result.error, live.result.message) == (
        AgentErrorType.ABORT,
        "the api is not enabled for this project",
    )
    assert len(live.gateway.requests) == 1
    live.assert_no_process_left()


async def test_a_reader_that_stops_fails_the_run_as_an_engine_error(tmp_path: Path) -> None:
    scenario = {"responses": [{"blocks": [{"text": prose(200_000)}], "chunk_chars": 4}]}

    def on_start(session: PiSession) -> None:
        process = session._process
        assert process is not None
        pipe = process._transport.get_pipe_transport(1)  # type: ignore[attr-defined]
        paused = False

        def stop_reading(event: dict[str, Any]) -> None:
            nonlocal paused
            if event["type"] == "text_delta" and not paused:
                # wizard stops reading pi's events (the rest of wizard, its proxy included,
                # goes on), and reads again after 5 s
                paused = True
                pipe.pause_reading()
                asyncio.get_running_loop().call_later(5, pipe.resume_reading)

        session.subscribe(stop_reading)

    live = await run_live(tmp_path, scenario, on_start=on_start, stall_seconds=1)
    assert live.result.error is AgentErrorType.ENGINE_FAILURE
    message = live.result.message or ""
    assert "wizard stopped reading the engine's events for 1 s" in message
    assert "    at " not in message, "a Node stack trace reached the error screen"
    live.assert_no_process_left()


async def test_a_write_over_1_mib_is_refused_before_it_runs_and_the_old_file_stays(
    tmp_path: Path,
) -> None:
    """Over the tool-argument limit (1 MiB), the model gets a tool error naming the limit: in
    its next turn, or in the summary request pi makes first (1.x compacts a context its
    estimate puts over the model's window, as a call this long does)."""
    old = "old line\n" * 100_000
    new = "".join(f"new line {n}\n" for n in range(80_000))
    assert 1_048_576 < len(new) < 1_200_000
    target = tmp_path / "big.txt"
    target.write_text(old)
    scenario = {
        "responses": [
            {"blocks": [call("write", path="big.txt", content=new)], "chunk_chars": 65_536},
            *DONE,
        ]
    }
    live = await run_live(tmp_path, scenario)
    assert target.read_text() == old
    later = json.dumps([request.body for request in live.gateway.requests[1:]])
    assert "over the 1,048,576 a tool call may carry" in later
    assert not [p for p in os.listdir(tmp_path) if ".wizard-" in p], "a temp file was left"
    live.assert_no_process_left()


async def test_a_tool_call_past_the_streamed_bound_is_cut_before_pi_parses_it(
    tmp_path: Path,
) -> None:
    """A 5 MB argument cost pi minutes of CPU (it re-parses the partial JSON with every
    delta): the proxy cuts the stream at 1.5 MiB, and the run is an API error naming why."""
    content = "y" * 5_000_000
    scenario = {
        "responses": [
            {"blocks": [call("write", path="huge.txt", content=content)], "chunk_chars": 65_536}
        ]
    }
    live = await run_live(tmp_path, scenario)
    assert live.result.error is AgentErrorType.API_ERROR, live.result
    assert "characters of arguments" in (live.result.message or "")
    assert not (tmp_path / "huge.txt").exists()
    live.assert_no_process_left()
