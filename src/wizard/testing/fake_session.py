"""A strict scripted stand-in for `PiSession`, the pi engine boundary, for unit tests.

Each `prompt()` plays the next scripted turn as pi would emit it over RPC: `agent_start`,
the user message, then per assistant message `message_start`, streamed `message_update`
deltas per block (`contentIndex`), `message_end`, and for each tool call the fence check and
the host tool through the real `HostBridge`, then `agent_end`. `abort()` stops the turn at
the next event, as pi does. A prompt past the end of the script fails the test, and
`assert_complete()` fails when scripted turns were left unplayed.

A turn is a list of messages; a message is `{"blocks": [...]}` with blocks shaped like the
scripted gateway's (`{"text"}`, `{"thinking"}`, `{"tool_call": {"name", "arguments"}}`),
plus optional `"stop_reason"`/`"error"`. A turn may instead be `{"raise": "message"}`, which
makes `prompt()` fail the way a broken engine does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from wizard.errors import EngineError
from wizard.runner.harness.pi.session import PiLaunch
from wizard.runner.harness.types import PromptResult, SessionStats

Turn = list[dict[str, Any]] | dict[str, Any]


class FakePiSession:
    """Plays scripted turns to the harness; use it as `PiHarness(session_factory=fake)`."""

    def __init__(
        self,
        turns: Sequence[Turn],
        *,
        chunk_chars: int = 4,
        stats: SessionStats | None = None,
        builtin_results: dict[str, str] | None = None,
    ) -> None:
        self.turns = list(turns)
        self.chunk_chars = chunk_chars
        self.prompts: list[str] = []
        self.aborts = 0
        self.events: list[dict[str, Any]] = []
        self.started = False
        self.closed = False
        self.launch: PiLaunch | None = None
        self._stats = stats or SessionStats(input_tokens=10, output_tokens=5)
        self._builtin_results = builtin_results or {}
        self._subscribers: list[Callable[[dict[str, Any]], None]] = []
        self._aborted = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()

    def __call__(self, launch: PiLaunch) -> FakePiSession:
        self.launch = launch
        return self

    def assert_complete(self) -> None:
        """Fail unless every scripted turn was played."""
        left = len(self.turns) - len(self.prompts)
        assert left == 0, f"{left} scripted turn(s) never played"

    async def start(self) -> None:
        """Pretend to start the engine."""
        self.started = True

    def subscribe(self, callback: Callable[[dict[str, Any]], None]) -> Callable[[], None]:
        """Receive every event."""
        self._subscribers.append(callback)
        return lambda: self._subscribers.remove(callback)

    async def stats(self) -> SessionStats:
        """The scripted token usage."""
        return self._stats

    async def close(self) -> None:
        """Pretend to stop the engine."""
        self.closed = True

    async def abort(self) -> None:
        """End the turn in flight at its next event; return once it has ended."""
        self.aborts += 1
        self._aborted.set()
        await self._idle.wait()

    async def prompt(self, text: str) -> PromptResult:
        """Play the next scripted turn."""
        assert not self.closed, "prompt() after close()"
        index = len(self.prompts)
        assert index < len(self.turns), f"unexpected prompt #{index + 1}: {text[:80]!r}"
        self.prompts.append(text)
        turn = self.turns[index]
        if isinstance(turn, dict):
            raise EngineError(str(turn["raise"]))
        self._aborted.clear()
        self._idle.clear()
        try:
            return await self._play(text, turn)
        finally:
            self._idle.set()

    async def _emit(self, event: dict[str, Any]) -> None:
        self.events.append(event)
        for callback in list(self._subscribers):
            callback(event)
        await asyncio.sleep(0)

    async def _play(self, text: str, messages: list[dict[str, Any]]) -> PromptResult:
        await self._emit({"type": "agent_start"})
        user = {"role": "user", "content": [{"type": "text", "text": text}]}
        await self._emit({"type": "message_end", "message": user})
        result = PromptResult("stop")
        for spec in messages:
            message = await self._stream_message(spec)
            result = PromptResult(message["stopReason"], message.get("errorMessage"))
            if self._aborted.is_set():
                break
            await self._run_tools(message)
            if self._aborted.is_set():
                result = PromptResult("aborted", "Request was aborted.")
                break
        await self._emit({"type": "agent_end", "messages": []})
        return result

    async def _stream_message(self, spec: dict[str, Any]) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": [], "stopReason": "stop"}
        await self._emit({"type": "message_start", "message": {"role": "assistant"}})
        for index, block in enumerate(spec.get("blocks", [])):
            if not await self._stream_block(message, index, block):
                message.update(stopReason="aborted", errorMessage="Request was aborted.")
                await self._emit({"type": "message_end", "message": message})
                return message
        calls = any(b["type"] == "toolCall" for b in message["content"])
        message["stopReason"] = spec.get("stop_reason", "toolUse" if calls else "stop")
        if "error" in spec:
            message.update(stopReason="error", errorMessage=spec["error"])
        await self._emit({"type": "message_end", "message": message})
        return message

    async def _stream_block(
        self, message: dict[str, Any], index: int, block: dict[str, Any]
    ) -> bool:
        """Stream one block; False if the turn was aborted meanwhile."""
        if "tool_call" in block:
            call = block["tool_call"]
            content = {"type": "toolCall", "id": f"call-{index}", "name": call["name"]}
            message["content"].append({**content, "arguments": call.get("arguments", {})})
            return not self._aborted.is_set()
        kind, body = ("text", block["text"]) if "text" in block else ("thinking", block["thinking"])
        message["content"].append({"type": kind, kind: ""})
        await self._emit(self._update(f"{kind}_start", index))
        for start in range(0, len(body), self.chunk_chars):
            if self._aborted.is_set():
                return False
            delta = body[start : start + self.chunk_chars]
            message["content"][-1][kind] += delta
            await self._emit(self._update(f"{kind}_delta", index, delta=delta))
        await self._emit(self._update(f"{kind}_end", index, content=body))
        return not self._aborted.is_set()

    @staticmethod
    def _update(kind: str, index: int, **extra: Any) -> dict[str, Any]:
        event = {"type": kind, "contentIndex": index, **extra}
        return {"type": "message_update", "assistantMessageEvent": event}

    async def _run_tools(self, message: dict[str, Any]) -> None:
        assert self.launch is not None, "the harness never handed the fake its launch"
        bridge = self.launch.bridge
        for call in (b for b in message["content"] if b["type"] == "toolCall"):
            name, args = call["name"], call["arguments"]
            await self._emit({"type": "tool_execution_start", "toolName": name, "args": args})
            permit = await bridge.handle({"op": "permit", "name": name, "input": args})
            if not permit["allow"]:
                answer = {"text": permit["reason"], "isError": True}
            elif name in bridge.tools:
                answer = await bridge.handle({"op": "tool", "name": name, "input": args})
            else:
                answer = {"text": self._builtin_results.get(name, "ok"), "isError": False}
            result = {"content": [{"type": "text", "text": answer["text"]}]}
            end = {"type": "tool_execution_end", "toolName": name, "result": result}
            await self._emit({**end, "isError": answer["isError"]})
            tool_message = {"role": "toolResult", "toolName": name, "content": result["content"]}
            await self._emit({"type": "message_end", "message": tool_message})
