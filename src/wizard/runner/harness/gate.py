"""The one gate around a tool call, for every engine.

An engine asks two things of wizard for each tool call its model makes, over its own
transport (pi's host over the bridge socket, the Claude CLI over the SDK's hook and in-process
MCP server):

- **may it run?** (`permit`): the fence judges the call and the run records the decision (a
  critical violation ends the run); once the run is ending (a stop marker, a violation, a
  task that reported) nothing more runs, not even a call made in the same message;
- **run it** (`call`): one of wizard's host tools, whose failure, whatever it is, goes back
  to the model as a tool error instead of up the stack.

The transports only translate; every decision is made here, once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from wizard.tools.base import Decision, HostTool, ToolResult
from wizard.tools.fence import Fence

log = logging.getLogger(__name__)

ENDING = "Blocked: the run is ending; no more tools run."


class ToolGate:
    """Decides and runs the tool calls of one run."""

    def __init__(
        self,
        tools: Sequence[HostTool],
        fence: Fence,
        on_decision: Callable[[str, Decision], None] = lambda name, decision: None,
        halted: Callable[[], bool] = lambda: False,
    ) -> None:
        self.tools = {tool.name: tool for tool in tools}
        self.fence = fence
        self._on_decision = on_decision
        self.halted = halted

    def serving(self, *tools: HostTool) -> ToolGate:
        """This gate with more host tools (an engine's stand-in for a tool of its own)."""
        return ToolGate([*self.tools.values(), *tools], self.fence, self._on_decision, self.halted)

    def permit(self, name: str, arguments: Mapping[str, Any]) -> Decision:
        """The fence's decision for a call, recorded; a refusal once the run is ending.

        The fence judges even then, so a critical violation is on record."""
        decision = self.fence.check(name, arguments)
        self._on_decision(name, decision)
        if decision.allow and self.halted():
            return Decision(False, ENDING)
        return decision

    async def call(self, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        """Run one of wizard's host tools; every failure is a tool error for the model."""
        if self.halted():
            return ToolResult(ENDING, is_error=True)
        tool = self.tools.get(name)
        if tool is None:
            return ToolResult(f"Error: unknown host tool {name}", is_error=True)
        try:
            return await tool.handler(arguments)
        except Exception as exc:  # a tool bug goes back to the model, not up the stack
            log.exception("host tool %s failed", name)
            return ToolResult(f"Error: {name} failed: {exc}", is_error=True)
