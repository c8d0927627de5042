"""A strict scripted stand-in for `PiSession`, the pi engine boundary, for unit tests.

Each `prompt()` plays the next scripted turn as wizard's pi host emits it (the protocol in
`wizard.runner.harness.pi.session`): per assistant message, streamed `text_start` /
`text_delta` / `text_end` per text block (`index`), then `message_end`, and for each tool call
the run's tool gate (the fence's decision, then the host tool) between `tool_start` and
`tool_end`, as pi's host asks it over the bridge; then `agent_end`. A batch whose every
tool result says `terminate` ends the turn, as in pi. `abort()` stops the turn at the next
event, as pi does. A prompt past the end of the script fails the test, and
`assert_complete()` fails when scripted turns were left unplayed.

A turn is a list of messages; a message is `{"blocks": [...]}` with blocks shaped like the
scripted gateway's (`{"text"}`, `{"thinking"}`, `{"tool_call": {"name", "arguments"}}`; the
builders in `wizard.testing.script`),
plus optional `"stop_reason"`/`"error"`, and `"raise": "message"` to make `prompt()` fail the
way a broken engine does once that message has ended, and `"hang": true` to make the
message wait, before streaming, until the turn is aborted (a model that never answers). A
turn may instead be `{"raise": "message"}`, which fails at once. With `stream_text=False` no
text is streamed: each message arrives whole at `message_end`.

`FakeSessions` serves runs with several conversations (the orchestrator's seed and tasks):
each launch gets its own `FakeSession`, whose script is picked at its first prompt.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from wizard.errors import EngineError
from wizard.runner.harness.types import EngineLaunch, PromptResult, SessionStats
from wizard.tools.base import ToolResult

Turn = list[dict[str, Any]] | dict[str, Any]


class FakeSession:
    """An engine session that plays scripted turns to the driver, for any harness (a fake at
    the engine boundary): `PiHarness(session_factory=fake)`."""

    def __init__(
        self,
        turns: Sequence[Turn],
        *,
        chunk_chars: int = 4,
        stream_text: bool = True,
        stats: SessionStats | None = None,
        builtin_results: dict[str, str] | None = None,
    ) -> None:
        self.turns = list(turns)
        self.chunk_chars = chunk_chars
        self.stream_text = stream_text
        self.prompts: list[str] = []
        self.aborts = 0
        self.events: list[dict[str, Any]] = []
        self.started = False
        self.closed = False
        self.launch: EngineLaunch | None = None
        self._stats = stats or SessionStats(input_tokens=10, output_tokens=5)
        self._builtin_results = builtin_results or {}
        self._subscribers: list[Callable[[dict[str, Any]], None]] = []
        self._aborted = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()

    def __call__(self, launch: EngineLaunch) -> FakeSession:
        self.launch = launch
        return self

    def assert_complete(self) -> None:
        """Fail unless every scripted turn was played."""
        left = len(self.turns) - len(self.prompts)
        assert left == 0, f"{left} scripted turn(s) never played"

    async def start(self) -> None:
        """Pretend to start the engine."""
        self.started = True

    @property
    def pid(self) -> int | None:
        """No process."""
        return None

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
        result = PromptResult("stop")
        for spec in messages:
            calls: list[dict[str, Any]] = []
            result = await self._stream_message(spec, calls)
            if "raise" in spec:
                raise EngineError(str(spec["raise"]))
            if self._aborted.is_set():
                break
            terminated = await self._run_tools(calls)
            if self._aborted.is_set():
                result = PromptResult("aborted", "Request was aborted.")
                break
            if terminated:  # pi asks the model nothing more this turn
                left = len(messages) - messages.index(spec) - 1
                assert left == 0, f"{left} scripted message(s) after a terminating tool batch"
                break
        await self._emit({"type": "agent_end", **_ending(result)})
        return result

    async def _stream_message(
        self, spec: dict[str, Any], calls: list[dict[str, Any]]
    ) -> PromptResult:
        """Stream one assistant message, collecting its tool calls; how it stopped."""
        if spec.get("hang"):
            await self._aborted.wait()
        texts: list[str] = []
        result = PromptResult("aborted", "Request was aborted.")
        for index, block in enumerate(spec.get("blocks", [])):
            if not await self._stream_block(index, block, texts, calls):
                break
        else:
            result = PromptResult(spec.get("stop_reason", "toolUse" if calls else "stop"))
            if "error" in spec:
                result = PromptResult("error", spec["error"])
        tools = [call["name"] for call in calls]
        await self._emit({"type": "message_end", "text": texts, "tools": tools, **_ending(result)})
        return result

    async def _stream_block(
        self, index: int, block: dict[str, Any], texts: list[str], calls: list[dict[str, Any]]
    ) -> bool:
        """Stream one block; False if the turn was aborted meanwhile."""
        if "tool_call" in block:
            calls.append(block["tool_call"])
        if "text" not in block:  # the host forwards no thinking and no tool-call arguments
            return not self._aborted.is_set()
        body = block["text"]
        if not self.stream_text:
            texts.append(body)
            return not self._aborted.is_set()
        texts.append("")
        await self._emit({"type": "text_start", "index": index})
        for start in range(0, len(body), self.chunk_chars):
            if self._aborted.is_set():
                return False
            delta = body[start : start + self.chunk_chars]
            texts[-1] += delta
            await self._emit({"type": "text_delta", "index": index, "delta": delta})
        await self._emit({"type": "text_end", "index": index})
        return not self._aborted.is_set()

    async def _run_tools(self, calls: list[dict[str, Any]]) -> bool:
        """Run one batch of tool calls; whether every result ended the turn (`terminate`)."""
        assert self.launch is not None, "the harness never handed the fake its launch"
        gate = self.launch.gate
        terminate = bool(calls)
        for number, call in enumerate(calls):
            name, args, call_id = call["name"], call.get("arguments", {}), f"call-{number}"
            await self._emit({"type": "tool_start", "id": call_id, "name": name, "args": args})
            decision = await gate.judge(name, args, call_id)
            if not decision.allow:
                answer = ToolResult(decision.reason, is_error=True)
            elif name in gate.tools:
                answer = await gate.call(name, args)
            else:
                answer = ToolResult(self._builtin_results.get(name, "ok"))
            terminate = terminate and not answer.is_error and answer.terminate
            end = {"type": "tool_end", "id": call_id, "name": name}
            await self._emit({**end, "isError": answer.is_error, "result": answer.text})
        return terminate


def _ending(result: PromptResult) -> dict[str, Any]:
    return {"stopReason": result.stop_reason, "errorMessage": result.error_message}


class FakeSessions:
    """A session factory for runs of several conversations, each with its own fake session.

    `scripts` maps a text to the scripts of the sessions whose first prompt contains it, in
    the order they start (a retried task's second session takes the second script). A first
    prompt that matches no text, or no script left, fails the test; `assert_complete()` fails
    when a script was never started or not played to its end.
    """

    def __init__(self, scripts: Mapping[str, Sequence[Sequence[Turn]]], **options: Any) -> None:
        self._scripts = {match: list(queue) for match, queue in scripts.items()}
        self._options = options
        self.sessions: list[FakeSession] = []

    def __call__(self, launch: EngineLaunch) -> FakeSession:
        session = _RoutedSession(self._route, **self._options)
        self.sessions.append(session)
        return session(launch)

    def started(self, match: str) -> list[FakeSession]:
        """The sessions whose first prompt contained `match`, in start order."""
        return [s for s in self.sessions if s.prompts and match in s.prompts[0]]

    def assert_complete(self) -> None:
        """Fail unless every script was started and played to its end."""
        left = {match: len(queue) for match, queue in self._scripts.items() if queue}
        assert not left, f"scripts never started: {left}"
        for session in self.sessions:
            session.assert_complete()

    def _route(self, prompt: str) -> list[Turn]:
        for match, queue in self._scripts.items():
            if match in prompt:
                assert queue, f"no script left for a session matching {match!r}"
                return list(queue.pop(0))
        raise AssertionError(f"no script matches the first prompt {prompt[:120]!r}")


class _RoutedSession(FakeSession):
    """A fake session whose script is picked by its first prompt."""

    def __init__(self, route: Callable[[str], list[Turn]], **options: Any) -> None:
        super().__init__([], **options)
        self._route = route

    async def prompt(self, text: str) -> PromptResult:
        if not self.prompts and not self.turns:
            self.turns = self._route(text)
        return await super().prompt(text)
