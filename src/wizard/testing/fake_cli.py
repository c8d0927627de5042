"""A strict scripted stand-in for Claude Code's CLI, under the Claude Agent SDK, for unit tests.

`FakeClaudeCLI` is a `claude_agent_sdk.Transport` (the SDK's own way to fake its CLI): hand
it to `ClaudeSDKClient(options, transport=fake)`, for instance through
`AnthropicHarness(client_factory=fake.client)`. Each prompt the SDK writes plays the next
scripted turn, a list of frames:

- `{"text": "..."}` or `{"texts": [...]}`: one assistant message with those text blocks,
  streamed first as partial messages (`stream_event`, `chunk_chars` characters per delta)
  when the SDK asks for them, as the CLI does with `--include-partial-messages`; the rest
  of a block is not sent once `interrupt()` has arrived;
- `{"tool": NAME, "input": {...}}`: a tool call; the SDK's PreToolUse hook is asked first
  (through the control protocol, as the CLI does) and a denial goes back as the tool result;
  an allowed `mcp__SERVER__TOOL` runs in the SDK's in-process MCP server;
- `{"hold": true}`: the model is still streaming; the turn waits here until interrupted;
- `{"api_error": "..."}`: the model request failed (the CLI's synthetic error message).

A turn ends with a success result, or, once `interrupt()` arrives, with the CLI's interrupt
answer (`[Request interrupted by user]`, then an `error_during_execution` result). A prompt
past the script fails the test; `assert_complete()` fails when turns were left unplayed.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient, Transport

Frame = dict[str, Any]
_DONE = object()


class FakeClaudeCLI(Transport):
    """Plays scripted turns to the SDK; records what the SDK asked of the CLI."""

    def __init__(self, turns: Sequence[Sequence[Frame]], *, chunk_chars: int = 4) -> None:
        self.turns = [list(turn) for turn in turns]
        self.chunk_chars = chunk_chars
        self.streamed: list[str] = []  # the text deltas sent, in order
        self.prompts: list[str] = []
        self.requests: list[str] = []  # control requests the SDK sent: initialize, interrupt…
        self.tool_results: list[tuple[str, bool, str]] = []  # (tool, is_error, text)
        self.options: ClaudeAgentOptions | None = None
        self._out: asyncio.Queue[Any] = asyncio.Queue()
        self._hooks: list[str] = []
        self._answers: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._interrupted = asyncio.Event()
        self._play: asyncio.Task[None] | None = None
        self._ids = itertools.count(1)
        self._mcp_ready: set[str] = set()
        self.failure: BaseException | None = None

    def client(self, options: ClaudeAgentOptions) -> ClaudeSDKClient:
        """A client over this transport (a harness's `client_factory`)."""
        self.options = options
        return ClaudeSDKClient(options, transport=self)

    def assert_complete(self) -> None:
        """Fail unless every scripted turn was played (and the script itself did not break)."""
        if self.failure is not None:
            raise self.failure
        left = len(self.turns) - len(self.prompts)
        assert left == 0, f"{left} scripted turn(s) never played"

    # --- Transport ----------------------------------------------------------------------

    async def connect(self) -> None:
        """Nothing to start."""

    def is_ready(self) -> bool:
        """Always ready."""
        return True

    async def end_input(self) -> None:
        """The SDK is done writing."""

    async def close(self) -> None:
        """Stop playing; end the message stream."""
        if self._play is not None:
            self._play.cancel()
        self._out.put_nowait(_DONE)

    async def read_messages(self) -> AsyncIterator[dict[str, Any]]:
        """What the CLI would print, one frame at a time."""
        while (frame := await self._out.get()) is not _DONE:
            yield frame

    async def write(self, data: str) -> None:
        """One frame from the SDK; never blocks (the SDK awaits it before reading)."""
        for line in data.splitlines():
            if line.strip():
                self._receive(json.loads(line))

    # --- the CLI's side -----------------------------------------------------------------

    def _receive(self, frame: dict[str, Any]) -> None:
        kind = frame.get("type")
        if kind == "control_request":
            request = frame["request"]
            self.requests.append(request["subtype"])
            if request["subtype"] == "initialize":
                hooks = (request.get("hooks") or {}).get("PreToolUse") or []
                self._hooks = [cid for matcher in hooks for cid in matcher["hookCallbackIds"]]
            if request["subtype"] == "interrupt":
                self._interrupted.set()
            self._answer(frame["request_id"], {})
        elif kind == "control_response":
            response = frame["response"]
            future = self._answers.pop(response["request_id"], None)
            if future is not None and not future.done():
                future.set_result(response.get("response") or {})
        elif kind == "user":
            index = len(self.prompts)
            assert index < len(self.turns), f"unexpected prompt #{index + 1}"
            content = frame["message"]["content"]
            self.prompts.append(content if isinstance(content, str) else json.dumps(content))
            self._interrupted.clear()
            self._play = asyncio.ensure_future(self._turn(self.turns[index]))
            self._play.add_done_callback(self._played)

    def _played(self, play: asyncio.Task[None]) -> None:
        """A broken script fails the test instead of hanging it: the stream ends at once."""
        if not play.cancelled() and play.exception() is not None:
            self.failure = play.exception()
            self._out.put_nowait(_DONE)

    def _answer(self, request_id: str, response: dict[str, Any]) -> None:
        self._out.put_nowait(
            {
                "type": "control_response",
                "response": {"subtype": "success", "request_id": request_id, "response": response},
            }
        )

    async def _turn(self, frames: list[Frame]) -> None:
        self._out.put_nowait({"type": "system", "subtype": "init", "session_id": "fake"})
        failed = any("api_error" in frame for frame in frames)
        for frame in frames:
            if self._interrupted.is_set():
                break
            if frame.get("hold"):
                await self._interrupted.wait()
                break
            await self._play_frame(frame)
            await asyncio.sleep(0)
        if self._interrupted.is_set():
            self._out.put_nowait(_user_text("[Request interrupted by user]"))
            self._out.put_nowait(_result("error_during_execution", True, "aborted_streaming"))
        else:  # an API failure still ends as subtype "success", with is_error set
            self._out.put_nowait(_result("success", failed, "api_error" if failed else "completed"))

    async def _play_frame(self, frame: Frame) -> None:
        if "text" in frame or "texts" in frame:
            texts = frame.get("texts") or [frame["text"]]
            if self.options is not None and self.options.include_partial_messages:
                await self._stream(texts)
            if not self._interrupted.is_set():
                self._out.put_nowait(_assistant([{"type": "text", "text": t} for t in texts]))
        elif "api_error" in frame:
            text = [{"type": "text", "text": f"API Error: {frame['api_error']}"}]
            self._out.put_nowait(_assistant(text, error="server_error"))
        elif "tool" in frame:
            await self._tool(frame["tool"], frame.get("input") or {})

    async def _stream(self, texts: list[str]) -> None:
        """The partial messages of one assistant message's text blocks, one delta at a time,
        each given the chance to be read before the next; stops at an interrupt."""
        for index, body in enumerate(texts):
            block = {"type": "text", "text": ""}
            self._out.put_nowait(_event({"type": "content_block_start", "index": index,
                                         "content_block": block}))  # fmt: skip
            for start in range(0, len(body), self.chunk_chars):
                await asyncio.sleep(0)
                if self._interrupted.is_set():
                    return
                delta = body[start : start + self.chunk_chars]
                self.streamed.append(delta)
                text = {"type": "text_delta", "text": delta}
                self._out.put_nowait(
                    _event({"type": "content_block_delta", "index": index, "delta": text})
                )
            self._out.put_nowait(_event({"type": "content_block_stop", "index": index}))

    async def _tool(self, name: str, arguments: dict[str, Any]) -> None:
        use_id = f"toolu_{next(self._ids)}"
        block = {"type": "tool_use", "id": use_id, "name": name, "input": arguments}
        self._out.put_nowait(_assistant([block]))
        denied = None
        for callback in self._hooks:
            answer = await self._ask(
                {
                    "subtype": "hook_callback",
                    "callback_id": callback,
                    "input": {"hook_event_name": "PreToolUse", "tool_name": name,
                              "tool_input": arguments, "tool_use_id": use_id},
                    "tool_use_id": use_id,
                }
            )  # fmt: skip
            output = answer.get("hookSpecificOutput") or {}
            if output.get("permissionDecision") == "deny":
                denied = output.get("permissionDecisionReason") or "denied"
        is_error, text = (True, denied) if denied is not None else await self._run(name, arguments)
        self.tool_results.append((name, is_error, text))
        result = {"type": "tool_result", "tool_use_id": use_id, "content": text}
        if is_error:
            result["is_error"] = True
        self._out.put_nowait({"type": "user", "message": {"role": "user", "content": [result]}})

    async def _run(self, name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
        """Run an allowed call: an SDK MCP tool through the SDK, as the CLI does; a built-in
        tool is not run (the fake has no file system of its own) and answers "ok"."""
        if not name.startswith("mcp__"):
            return False, "ok"
        _, server, tool = name.split("__", 2)
        if server not in self._mcp_ready:  # the handshake the CLI makes first
            self._mcp_ready.add(server)
            await self._mcp(
                server,
                "initialize",
                {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "fake", "version": "0"},
                },
            )
            await self._mcp(server, "notifications/initialized", None)
        answer = await self._mcp(server, "tools/call", {"name": tool, "arguments": arguments})
        if "error" in answer:
            return True, f"MCP error: {answer['error'].get('message')}"
        result = answer.get("result") or {}
        text = "".join(c.get("text", "") for c in result.get("content", []))
        return bool(result.get("isError") or result.get("is_error")), text

    async def _mcp(self, server: str, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message.update(id=next(self._ids), params=params)
        answer = await self._ask(
            {"subtype": "mcp_message", "server_name": server, "message": message}
        )
        return dict(answer.get("mcp_response") or {})

    async def _ask(self, request: dict[str, Any]) -> dict[str, Any]:
        request_id = f"cli-{next(self._ids)}"
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._answers[request_id] = future
        self._out.put_nowait({"type": "control_request", "request_id": request_id,
                              "request": request})  # fmt: skip
        return await future


def _assistant(content: list[dict[str, Any]], error: str | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"id": "msg_fake", "model": "scripted-1", "content": content}
    frame: dict[str, Any] = {"type": "assistant", "message": message}
    if error is not None:
        frame["error"] = error
    return frame


def _event(event: dict[str, Any]) -> dict[str, Any]:
    return {"type": "stream_event", "uuid": "fake", "session_id": "fake", "event": event}


def _user_text(text: str) -> dict[str, Any]:
    return {
        "type": "user",
        "message": {"role": "user", "content": [{"type": "text", "text": text}]},
    }


def _result(subtype: str, is_error: bool, reason: str) -> dict[str, Any]:
    return {
        "type": "result",
        "subtype": subtype,
        "duration_ms": 1,
        "duration_api_ms": 1,
        "is_error": is_error,
        "num_turns": 1,
        "session_id": "fake",
        "terminal_reason": reason,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }
