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
from collections.abc import Callable

from wizard.engines.bundle import verified_pi
from wizard.errors import EngineError
from wizard.events import LogLine, SpinnerMessage, SpinnerStarted
from wizard.outcome import AgentResult
from wizard.runner.harness import endings
from wizard.runner.harness.pi.bridge import HostBridge
from wizard.runner.harness.pi.listener import RunListener
from wizard.runner.harness.pi.session import PiLaunch, PiSession
from wizard.runner.harness.prompts import runtime_notes
from wizard.runner.harness.state import RunState
from wizard.runner.harness.types import AgentSession, PromptResult, RunInputs, TaskRunInputs
from wizard.signals import REMARK_INSTRUCTION

# pi's own shell (wrapped by the OS sandbox in the host); its file tools are replaced by
# wizard's (`read`, `write`, `edit` over the bridge), which check a path as they open it.
BUILTIN_TOOLS = ("bash",)
SessionFactory = Callable[[PiLaunch], AgentSession]


class PiHarness:
    """The default harness: the pi coding agent over RPC."""

    name = "pi"

    def __init__(self, session_factory: SessionFactory = PiSession) -> None:
        self._session_factory = session_factory

    async def prepare(self, progress: Callable[[str], None]) -> None:
        """Make sure pi is installed (installing it on first use) and its files are the ones
        installed; `EngineError` (`EngineChanged`) if not."""
        await asyncio.to_thread(verified_pi, progress)

    async def run(self, inputs: RunInputs) -> AgentResult:
        """Run one linear conversation and say how it ended."""
        return await self._drive(RunState(inputs, self.name))

    async def run_task(self, inputs: TaskRunInputs) -> AgentResult:
        """Run one orchestrator seed or task conversation and say how it ended."""
        return await self._drive(RunState(inputs, self.name))

    async def _drive(self, run: RunState) -> AgentResult:
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
                    session.subscribe(RunListener(run.latch, run.output))
                    return await self._converse(session, run)
                finally:
                    await session.close()
        except EngineError as exc:
            return endings.interrupted(run) or endings.engine_failed(run, str(exc))

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

    async def _converse(self, session: AgentSession, run: RunState) -> AgentResult:
        end = await self._work_turn(session, run, run.inputs.prompt)
        nudge, most = run.nudge()
        nudges = 0
        while self._may_continue(run, end) and nudges < most:
            nudges += 1
            run.inputs.sink(LogLine(f"work still open, nudge {nudges}/{most}"))
            end = await self._work_turn(session, run, nudge)
        if (ending := endings.interrupted(run)) is not None:
            return ending
        if end.stop_reason == "error":
            return endings.failed(run, end.error_message or "the model request failed")
        if run.task is not None:  # the queue, not the harness, says whether the task reported
            return endings.completed(run, await session.stats())
        await self._remark(session, run)
        return endings.guard(run) or endings.succeeded(run, await session.stats())

    @staticmethod
    def _may_continue(run: RunState, end: PromptResult) -> bool:
        return end.stop_reason != "error" and run.may_continue()

    @staticmethod
    async def _work_turn(session: AgentSession, run: RunState, text: str) -> PromptResult:
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
    async def _remark(session: AgentSession, run: RunState) -> None:
        run.enter_remark()  # not a work turn: it never ends or reclassifies a run
        try:
            await session.prompt(REMARK_INSTRUCTION)
        except EngineError as exc:
            run.inputs.sink(LogLine(f"[pi] remark request failed: {exc}", "warning"))
