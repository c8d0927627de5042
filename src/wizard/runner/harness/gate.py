"""The one gate around a tool call, for every engine.

An engine asks two things of wizard for each tool call its model makes, over its own
transport (pi's host over the bridge socket, the Claude CLI over the SDK's hook and in-process
MCP server):

- **may it run?** (`permit`): the fence judges the call and the run records the decision (a
  critical violation ends the run); once the run is ending (a stop marker, a violation, a
  task that reported) nothing more runs, not even a call made in the same message;
- **run it** (`call`): one of wizard's host tools, whose failure, whatever it is, goes back
  to the model as a tool error instead of up the stack.

The transports only translate; every decision is made here, once. What it decided goes to
the session's `SessionCalls` (`activity.py`), which tells the journal when nothing of the
agent's runs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from wizard.logs import logger
from wizard.runner.harness.activity import SessionCalls, ToolActivity
from wizard.tools.base import Decision, HostTool, ToolResult
from wizard.tools.fence import Fence

log = logger(__name__)

ENDING = "Blocked: the run is ending; no more tools run."
UNPREPARED = "Blocked: the run is not ready for tools; nothing runs until its skill is installed."


class ToolGate:
    """Decides and runs the tool calls of one run."""

    def __init__(
        self,
        tools: Sequence[HostTool],
        fence: Fence,
        on_decision: Callable[[str, Decision], None] = lambda name, decision: None,
        halted: Callable[[], bool] = lambda: False,
        calls: SessionCalls | None = None,
        ready: asyncio.Future[bool] | None = None,
    ) -> None:
        self.tools = {tool.name: tool for tool in tools}
        self.fence = fence
        self._on_decision = on_decision
        self.halted = halted
        self.calls = calls or ToolActivity().session()
        # What every call waits for before it is judged: what the run makes ready while its
        # engine starts (`RunInputs.tools_ready`); False: it could not be, and nothing runs.
        self._ready = ready

    def serving(self, *tools: HostTool) -> ToolGate:
        """This gate with more host tools (an engine's stand-in for a tool of its own)."""
        return ToolGate([*self.tools.values(), *tools], self.fence, self._on_decision,
                        self.halted, self.calls, self._ready)  # fmt: skip

    async def ready(self) -> bool:
        """Whether the run is ready for tools, once it is known (`RunInputs.tools_ready`)."""
        return self._ready is None or await asyncio.shield(self._ready)

    def ready_now(self) -> bool:
        """Whether the run is ready for tools now (False while that is not known yet)."""
        return self._ready is None or (self._ready.done() and self._ready.result())

    async def judge(
        self, name: str, arguments: Mapping[str, Any], call_id: str | None = None
    ) -> Decision:
        """`permit`, once the run is ready for tools; a refusal if it could not be made
        ready."""
        if not await self.ready():
            self.calls.judged(call_id, False)
            return Decision(False, UNPREPARED)
        return self.permit(name, arguments, call_id)

    def permit(
        self, name: str, arguments: Mapping[str, Any], call_id: str | None = None
    ) -> Decision:
        """The fence's decision for a call (`call_id`: the engine's id for it, which its
        `tool_end` event carries), recorded; a refusal once the run is ending.

        The fence judges even then, so a critical violation is on record."""
        decision = self.fence.check(name, arguments)
        self._on_decision(name, decision)
        if decision.allow and self.halted():
            decision = Decision(False, ENDING)
        self.calls.judged(call_id, decision.allow)
        return decision

    async def call(self, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        """Run one of wizard's host tools; every failure is a tool error for the model. Its
        engine asked `judge` first; one asked before the run is ready runs nothing anyway."""
        if self.halted():
            return ToolResult(ENDING, is_error=True)
        if not self.ready_now():
            return ToolResult(UNPREPARED, is_error=True)
        tool = self.tools.get(name)
        if tool is None:
            return ToolResult(f"Error: unknown host tool {name}", is_error=True)
        try:
            return await tool.handler(arguments)
        except Exception as exc:  # a tool bug goes back to the model, not up the stack
            log.exception("host tool %s failed", name)
            return ToolResult(f"Error: {name} failed: {exc}", is_error=True)
