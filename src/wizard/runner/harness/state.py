"""What one agent run holds while it goes on, whichever engine runs it.

`RunState` is the harness-neutral record a harness feeds: the latch, the fence, the task
list, and `RunOutput` (what the agent said and did: turns, tool calls, `[STATUS]` lines,
links, signals, the remark). `runner.harness.endings` reads it to say how the run ended, so
two harnesses give every ending one meaning.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from wizard.events import AnalyticsEvent, EventSink, LogLine, SpinnerMessage, SpinnerStopped
from wizard.runner.harness.latch import StopLatch
from wizard.runner.harness.types import RunInputs, TaskRunInputs
from wizard.signals import OutputSignals, dashboard_url, last_status_line, notebook_url
from wizard.tools.base import Decision, HostTool, ToolResult
from wizard.tools.fence import Fence
from wizard.tools.files import file_tools
from wizard.tools.todos import TodoList, todo_tools

MAX_CONTINUE_NUDGES = 20
CONTINUE_INSTRUCTION = (
    "You still have open tasks in your list (not all are marked `completed`). Do not stop — "
    "pick up the next `in_progress` or `pending` task and keep working until every task is "
    "`completed`. Continue now."
)


class RunOutput:
    """What the agent said and did in one run (the remark reply kept apart)."""

    def __init__(self, sink: EventSink) -> None:
        self.sink = sink
        self.signals = OutputSignals()
        self.assistant_turns = 0
        self.tool_calls = 0
        self.dashboard_url: str | None = None
        self.notebook_url: str | None = None
        self.in_remark = False
        self._remarks = OutputSignals(max_lines=8)

    def assistant_text(self, text: str) -> None:
        """One complete assistant message's text: status, links and signals."""
        self.assistant_turns += 1
        text = text.strip()
        if not text:
            return
        self.sink(LogLine(text[:1000], "debug"))
        if self.in_remark:
            self._remarks.push(text)
            return
        self.dashboard_url = dashboard_url(text) or self.dashboard_url
        self.notebook_url = notebook_url(text) or self.notebook_url
        if status := last_status_line(text):
            self.sink(SpinnerMessage(status))
        self.signals.push(text)

    def tool_called(self) -> None:
        """The agent called a tool (calls in the remark reply do not count)."""
        if not self.in_remark:
            self.tool_calls += 1

    def remark(self) -> str | None:
        """The agent's remark: from the remark reply, else from a work turn."""
        return self._remarks.remark() or self.signals.remark()


class RunState:
    """The state of one run: what the harness drives and the classification reads."""

    def __init__(self, inputs: RunInputs, engine: str, *, skill_markers: bool = True) -> None:
        self.inputs = inputs
        self.engine = engine
        self.started = time.monotonic()
        self.todos = TodoList(inputs.sink)
        self.fence = Fence(
            inputs.project_dir,
            disallowed_tools=inputs.disallowed_tools,
            sandboxed=inputs.sandbox is not None,
            read_only=inputs.read_only,
            code_paths=inputs.code_paths,
        )
        # Set by the first stop marker or a critical fence violation: the turn ends now.
        self.halt = asyncio.Event()
        self.violated_at: float | None = None  # monotonic, when the fence latched
        # Why the run stopped at its deadline (`--max-time`), its running command with it.
        self.out_of_time: str | None = None
        self.task = inputs if isinstance(inputs, TaskRunInputs) else None
        until = self.task.reported if self.task is not None else lambda: False
        self.latch = StopLatch(
            inputs.gateway.refusal_marker, fired=self.halt, until=until, skill_markers=skill_markers
        )
        self.output = RunOutput(inputs.sink)

    def tools(self) -> list[HostTool]:
        """The run's host tools: the file tools, the todo list's, and the program's allowed;
        none that the run disallows."""
        allowed = set(self.inputs.allowed_tools)
        program_tools = [
            t for t in self.inputs.tools(self.fence) if not allowed or t.name in allowed
        ]
        todo_list = todo_tools(self.todos) if self.inputs.todo_list else []
        # wizard's file tools stand in for every engine's own: one checked-and-used path.
        tools = [*file_tools(self.fence.root), *todo_list, *program_tools]
        allowed_tools = [tool for tool in tools if tool.name not in self.fence.disallowed_tools]
        return [self._ends_on_report(tool) for tool in allowed_tools]

    def _ends_on_report(self, tool: HostTool) -> HostTool:
        """A task run is over once its task reported: the call that reports ends the turn
        (`halt`), so nothing after it in the message runs and the engine asks nothing more."""
        task = self.task
        if task is None:
            return tool
        inner = tool.handler

        async def handler(args: Mapping[str, Any]) -> ToolResult:
            result = await inner(args)
            if task.reported():
                self.halt.set()
            return result

        return replace(tool, handler=handler)

    def work_open(self) -> bool:
        """Whether the run's work is unfinished: its todo list open, its task not settled."""
        if self.task is not None:
            return not self.task.settled()
        return self.todos.has_open_todos()

    def ending(self) -> bool:
        """Whether the whole run is ending: a stop marker latched, the fence latched a
        critical violation, or its time ran out (a task that reported halts its own turn
        only)."""
        return (
            self.latch.marker is not None
            or self.violated_at is not None
            or self.out_of_time is not None
        )

    def may_continue(self) -> bool:
        """Whether a nudge may follow: work open, nothing latched, no violation, time left."""
        return (
            self.latch.marker is None
            and self.fence.violation is None
            and self.out_of_time is None
            and self.work_open()
        )

    def time_is_up(self, why: str) -> None:
        """The run's deadline passed: the turn ends now, and the command running with it."""
        if not self.halt.is_set():
            self.out_of_time = why
            self.halt.set()

    def nudge(self) -> tuple[str, int]:
        """The continue prompt and how many times it may be sent."""
        if self.task is not None:
            return self.task.nudge, self.task.max_nudges
        return CONTINUE_INSTRUCTION, MAX_CONTINUE_NUDGES

    def enter_remark(self, *, markers_count: bool = False) -> None:
        """What follows is the remark reply: read for the remark only. It cannot reclassify
        the run, nor end it unless the engine's policy lets its markers count."""
        if not markers_count:
            self.latch.disarm()
        self.output.in_remark = True

    def tools_closed(self) -> bool:
        """Whether no tool may run any more: the run is ending, or what follows is the remark
        reply (a remark is words; a call in it is refused, never carried out)."""
        return self.halt.is_set() or self.output.in_remark

    def emit(self, name: str, **properties: Any) -> None:
        """An analytics event, with the run's own properties (task type and id, harness)."""
        self.inputs.sink(AnalyticsEvent(name, {**properties, **self.inputs.analytics}))

    def timing(self) -> dict[str, Any]:
        """How long the run took, and on which model."""
        elapsed = time.monotonic() - self.started
        return {
            "duration_ms": int(elapsed * 1000),
            "duration_seconds": round(elapsed, 3),
            "model": self.inputs.model,
        }

    def stop(self, message: str) -> None:
        """Stop the spinner with `message` (a task run without a spinner shows nothing)."""
        if self.inputs.spinner_message:
            self.inputs.sink(SpinnerStopped(message))

    def on_decision(self, tool: str, decision: Decision) -> None:
        """The fence's answer for one call; a critical refusal ends the turn now."""
        if not decision.allow:
            self.inputs.sink(LogLine(f"fence denied {tool}: {decision.reason}", "warning"))
        if decision.critical:
            self.violated_at = self.violated_at or time.monotonic()
            self.halt.set()
