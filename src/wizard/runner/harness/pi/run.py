"""`PiHarness`: runs on the real pi engine that end truthfully on the first marker.

A run, as it reads below: start pi, send the prompt, nudge while the work is open and nothing
is latched, then end. A linear run's work is open while its task list is; it then asks for a
remark and classifies the ending. An orchestrator seed or task run (`run_task`) is open
until it has planned or reported, gets at most `max_nudges`, and has no remark and no
completion guard: the queue says whether the task reported. The first stop marker of a work
turn (a skill's `[ABORT] <reason>` or the gateway's refusal) aborts the turn in flight and
ends the run as `WIZARD_ABORT` with its reason and source: no nudge, no remark, no success.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from wizard.errors import EngineError
from wizard.events import (
    AnalyticsEvent,
    LogLine,
    SpinnerMessage,
    SpinnerStarted,
    SpinnerStopped,
)
from wizard.outcome import AgentErrorType, AgentResult
from wizard.runner.harness.failures import classify_failure
from wizard.runner.harness.latch import StopLatch
from wizard.runner.harness.pi.bridge import HostBridge
from wizard.runner.harness.pi.engine import ensure_pi
from wizard.runner.harness.pi.listener import RunListener
from wizard.runner.harness.pi.prompts import (
    CONTINUE_INSTRUCTION,
    MAX_CONTINUE_NUDGES,
    runtime_notes,
)
from wizard.runner.harness.pi.session import PiLaunch, PiSession
from wizard.runner.harness.types import AgentSession, PromptResult, RunInputs, TaskRunInputs
from wizard.signals import REMARK_INSTRUCTION, Marker
from wizard.tools.base import Decision, HostTool
from wizard.tools.fence import Fence
from wizard.tools.tasks import TaskStore, task_tools

BUILTIN_TOOLS = ("read", "bash", "edit", "write")
SessionFactory = Callable[[PiLaunch], AgentSession]
# Markers with which the agent says a resource the setup needs is out of reach.
_MISSING = (
    (Marker.ERROR_MCP_MISSING, AgentErrorType.MCP_MISSING, "Agent could not access PostHog MCP"),
    (
        Marker.ERROR_RESOURCE_MISSING,
        AgentErrorType.RESOURCE_MISSING,
        "Agent could not access setup resource",
    ),
)


class _Run:
    """The state of one run: what the classification at the end needs."""

    def __init__(self, inputs: RunInputs) -> None:
        self.inputs = inputs
        self.started = time.monotonic()
        self.store = TaskStore(inputs.sink)
        self.fence = Fence(
            inputs.project_dir,
            disallowed_tools=inputs.disallowed_tools,
            sandboxed=inputs.sandbox is not None,
        )
        # Set by the first stop marker or a critical fence violation: the turn ends now.
        self.halt = asyncio.Event()
        self.task = inputs if isinstance(inputs, TaskRunInputs) else None
        until = self.task.reported if self.task is not None else lambda: False
        self.latch = StopLatch(inputs.gateway.refusal_marker, fired=self.halt, until=until)
        self.listener = RunListener(self.latch, inputs.sink)

    def tools(self) -> list[HostTool]:
        """The run's host tools: the task list's, and the program's allowed, not disallowed."""
        allowed = set(self.inputs.allowed_tools)
        program_tools = [
            t for t in self.inputs.tools(self.fence) if not allowed or t.name in allowed
        ]
        task_list = task_tools(self.store) if self.inputs.task_list else []
        tools = [*task_list, *program_tools]
        return [tool for tool in tools if tool.name not in self.fence.disallowed_tools]

    def work_open(self) -> bool:
        """Whether the run's work is unfinished: its task list open, its task not settled."""
        if self.task is not None:
            return not self.task.settled()
        return self.store.has_open_tasks()

    def nudge(self) -> tuple[str, int]:
        """The continue prompt and how many times it may be sent."""
        if self.task is not None:
            return self.task.nudge, self.task.max_nudges
        return CONTINUE_INSTRUCTION, MAX_CONTINUE_NUDGES

    def emit(self, name: str, **properties: Any) -> None:
        self.inputs.sink(AnalyticsEvent(name, {**properties, **self.inputs.analytics}))

    def timing(self) -> dict[str, Any]:
        elapsed = time.monotonic() - self.started
        return {
            "duration_ms": int(elapsed * 1000),
            "duration_seconds": round(elapsed, 3),
            "model": self.inputs.model,
        }

    def stop(self, message: str) -> None:
        if self.inputs.spinner_message:
            self.inputs.sink(SpinnerStopped(message))

    def on_decision(self, tool: str, decision: Decision) -> None:
        if not decision.allow:
            self.inputs.sink(LogLine(f"fence denied {tool}: {decision.reason}", "warning"))
        if decision.critical:
            self.halt.set()


class PiHarness:
    """The default harness: the pi coding agent over RPC."""

    name = "pi"

    def __init__(self, session_factory: SessionFactory = PiSession) -> None:
        self._session_factory = session_factory

    async def prepare(self, progress: Callable[[str], None]) -> None:
        """Make sure pi is installed (installing it on first use); `EngineError` if it cannot."""
        await asyncio.to_thread(ensure_pi, progress)

    async def run(self, inputs: RunInputs) -> AgentResult:
        """Run one linear conversation and say how it ended."""
        return await self._drive(_Run(inputs))

    async def run_task(self, inputs: TaskRunInputs) -> AgentResult:
        """Run one orchestrator seed or task conversation and say how it ended."""
        return await self._drive(_Run(inputs))

    async def _drive(self, run: _Run) -> AgentResult:
        inputs = run.inputs
        if inputs.spinner_message:
            inputs.sink(SpinnerStarted(inputs.spinner_message))
        try:
            bridge = HostBridge(run.tools(), run.fence, run.on_decision, run.halt.is_set)
            async with bridge:
                session = self._session_factory(self._launch(inputs, bridge))
                try:
                    await session.start()
                    inputs.sink(LogLine("the pi engine is ready", "debug"))
                    session.subscribe(run.listener)
                    return await self._converse(session, run)
                finally:
                    await session.close()
        except EngineError as exc:
            if run.fence.violation is not None:
                return self._violated(run)
            if run.latch.marker is not None:
                return self._aborted(run)
            return self._engine_failed(run, str(exc))

    def _launch(self, inputs: RunInputs, bridge: HostBridge) -> PiLaunch:
        return PiLaunch(
            project_dir=inputs.project_dir,
            gateway=inputs.gateway,
            model=inputs.model,
            bridge=bridge,
            tool_names=(*BUILTIN_TOOLS, *bridge.tools),
            system_prompt=runtime_notes(task_list=inputs.task_list),
            notify=lambda message: inputs.sink(SpinnerMessage(message)),
            engine_timeout=inputs.engine_timeout,
            sandbox=inputs.sandbox,
        )

    async def _converse(self, session: AgentSession, run: _Run) -> AgentResult:
        end = await self._work_turn(session, run, run.inputs.prompt)
        nudge, most = run.nudge()
        nudges = 0
        while self._may_continue(run, end) and nudges < most:
            nudges += 1
            run.inputs.sink(LogLine(f"work still open, nudge {nudges}/{most}"))
            end = await self._work_turn(session, run, nudge)
        # The fence's critical violation outranks the marker, as the anthropic harness does.
        if run.fence.violation is not None:
            return self._violated(run)
        if run.latch.marker is not None:
            return self._aborted(run)
        if end.stop_reason == "error":
            return self._failed(run, end.error_message or "the model request failed")
        if run.task is not None:  # the queue, not the harness, says whether the task reported
            return await self._completed(session, run)
        await self._remark(session, run)
        return await self._classify(session, run)

    @staticmethod
    def _may_continue(run: _Run, end: PromptResult) -> bool:
        return (
            run.latch.marker is None
            and run.fence.violation is None
            and end.stop_reason != "error"
            and run.work_open()
        )

    @staticmethod
    async def _work_turn(session: AgentSession, run: _Run, text: str) -> PromptResult:
        """Prompt, and abort the turn the moment a stop marker is latched.

        A reply the gateway edge cut as incomplete ends the turn as an error, whatever the
        engine made of it: a truncated reply is never a finished turn.
        """
        prompt = asyncio.ensure_future(session.prompt(text))
        fired = asyncio.ensure_future(run.halt.wait())
        try:
            await asyncio.wait({prompt, fired}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:  # the run is stopped from outside: closing aborts pi
            prompt.cancel()
            raise
        finally:
            fired.cancel()
        if not prompt.done():
            await session.abort()
        try:
            end = await prompt
        except EngineError:
            if not run.halt.is_set():
                raise
            return PromptResult("aborted")
        if session.gateway_fault is not None and not run.halt.is_set():
            return PromptResult("error", session.gateway_fault)
        return end

    @staticmethod
    async def _remark(session: AgentSession, run: _Run) -> None:
        run.listener.enter_remark()  # not a work turn: it never ends or reclassifies a run
        try:
            await session.prompt(REMARK_INSTRUCTION)
        except EngineError as exc:
            run.inputs.sink(LogLine(f"[pi] remark request failed: {exc}", "warning"))

    def _aborted(self, run: _Run) -> AgentResult:
        marker = run.latch.marker
        assert marker is not None
        run.stop("Wizard aborted")
        extra = {"source": "gateway_policy"} if marker.source == "gateway_policy" else {}
        run.emit("agent aborted", **run.timing(), **extra)
        listener = run.listener
        return AgentResult(
            AgentErrorType.ABORT,
            marker.reason,
            marker.source,
            dashboard_url=listener.dashboard_url,
            notebook_url=listener.notebook_url,
        )

    def _violated(self, run: _Run) -> AgentResult:
        run.stop("Security violation detected")
        run.emit("agent aborted", **run.timing())
        return AgentResult(AgentErrorType.SECURITY_VIOLATION, run.fence.violation)

    def _failed(self, run: _Run, message: str) -> AgentResult:
        run.stop(run.inputs.error_message)
        run.inputs.sink(LogLine(f"pi backend error: {message}", "error"))
        run.emit("agent aborted", **run.timing())
        error, shown = classify_failure(message, run.inputs.gateway.url)
        return AgentResult(error, shown)

    def _engine_failed(self, run: _Run, message: str) -> AgentResult:
        run.stop(run.inputs.error_message)
        run.inputs.sink(LogLine(f"pi engine failure: {message}", "error"))
        run.emit("agent aborted", **run.timing())
        return AgentResult(AgentErrorType.ENGINE_FAILURE, message)

    async def _classify(self, session: AgentSession, run: _Run) -> AgentResult:
        listener = run.listener
        if run.fence.violation is not None:
            return self._violated(run)
        for marker, error, stop in _MISSING:
            if listener.signals.has(marker):
                run.stop(stop)
                run.emit("agent aborted", **run.timing())
                return AgentResult(error, f"The agent reported {marker}.")
        if listener.tool_calls == 0:
            run.stop("Agent made no changes")
            run.emit("agent no progress", assistant_turns=listener.assistant_turns)
            run.emit("agent aborted", **run.timing())
            return AgentResult(AgentErrorType.NO_PROGRESS, "The agent made no tool calls.")
        if run.store.has_open_tasks():
            run.stop("Agent stopped before finishing")
            run.emit("agent incomplete tasks", open_tasks=True)
            run.emit("agent aborted", **run.timing())
            return AgentResult(AgentErrorType.INCOMPLETE_TASKS, "The agent left tasks open.")
        return await self._succeeded(session, run)

    async def _succeeded(self, session: AgentSession, run: _Run) -> AgentResult:
        listener = run.listener
        if remark := listener.remark():
            run.emit("wizard remark", remark=remark)
        if (detail := listener.signals.skill_install_failure()) is not None:
            run.emit("agent continued without skill", detail=detail)
        return await self._completed(session, run)

    async def _completed(self, session: AgentSession, run: _Run) -> AgentResult:
        listener = run.listener
        stats = await session.stats()
        run.emit(
            "agent completed",
            **run.timing(),
            num_turns=listener.assistant_turns,
            input_tokens=stats.input_tokens,
            output_tokens=stats.output_tokens,
            cache_creation_input_tokens=stats.cache_write_tokens,
            cache_read_input_tokens=stats.cache_read_tokens,
        )
        run.stop(run.inputs.success_message)
        return AgentResult(dashboard_url=listener.dashboard_url, notebook_url=listener.notebook_url)
