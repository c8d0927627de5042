"""The one conversation driver: every run of every engine, as it reads below.

Start the engine's session behind the run's edges, send the prompt, nudge while the work is
open and nothing is latched, ask for a remark (a linear run), and classify the ending
through the shared endings. The first stop marker of a work turn (a skill's `[ABORT]
<reason>` or the gateway's refusal) aborts the turn in flight and ends the run as
`WIZARD_ABORT` with its reason and source: no nudge, no remark, no success.

The driver owns the run's edges: it opens the gateway proxy (the real key stops here; a
session gets only the proxy's URL and the run's token), builds the one tool gate every
engine's transport serves, and watches the engine (`EngineWatchdog`). An engine is a session
class behind `AgentSession` plus its `DetectionPolicy`, the differences the reference requires
between engines, named once as a value. An orchestrator seed or task run (`run_task`) is
open until it has planned or reported, gets at most `max_nudges`, and has no remark and no
completion guard: the queue says whether the task reported.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Literal

from wizard.ahead import Timeline
from wizard.errors import EngineError
from wizard.events import LogLine, SpinnerMessage, SpinnerStarted
from wizard.outcome import AgentResult
from wizard.runner.harness import endings
from wizard.runner.harness.activity import SessionCalls
from wizard.runner.harness.gate import ToolGate
from wizard.runner.harness.listener import RunListener
from wizard.runner.harness.prompts import runtime_notes
from wizard.runner.harness.proxy import GatewayProxy, RetryPolicy
from wizard.runner.harness.state import RunState
from wizard.runner.harness.types import (
    AgentSession,
    EngineLaunch,
    PromptResult,
    RunInputs,
    TaskRunInputs,
)
from wizard.runner.harness.watchdog import EngineWatchdog
from wizard.signals import REMARK_INSTRUCTION

SessionFactory = Callable[[EngineLaunch], AgentSession]
# How long a model request goes on without its reply ending before the model counts as
# thinking (`EngineLaunch.thinking`): a reply sooner (a gateway's refusal, an answer at once)
# ends the run or asks for its command before a sandbox made meanwhile could be ready, and
# one made for nothing would cost the run's end its undoing.
THINKING_AFTER_S = 0.1


@dataclass(frozen=True)
class DetectionPolicy:
    """Which stop markers an engine's runs act on, as the reference has each engine do.

    `skill_aborts`: `"always"` looks for a skill's `[ABORT]` in every work turn;
    `"declared"` only when the program declares abort cases (the TypeScript wizard's
    anthropic path, checklist §10.6). The gateway's refusal counts in every run.
    `remark_markers`: whether a marker in the remark reply still ends the run.
    """

    skill_aborts: Literal["always", "declared"]
    remark_markers: bool

    def skill_markers(self, inputs: RunInputs) -> bool:
        """Whether this run acts on a skill's `[ABORT]`."""
        return self.skill_aborts == "always" or inputs.detect_skill_aborts


class EngineHarness:
    """A harness: the one driver over one engine's sessions. A subclass names the engine,
    declares its detection policy and says how to get the engine ready (`prepare`)."""

    name: str
    detection: ClassVar[DetectionPolicy]

    def __init__(self, session_factory: SessionFactory) -> None:
        self._session_factory = session_factory
        self.ahead = Timeline()  # the run's, once `prepare` is given it

    async def prepare(self, progress: Callable[[str], None], ahead: Timeline) -> None:
        """Keep the run's timeline (what its proxies take ahead); a subclass gets its engine
        ready too."""
        self.ahead = ahead

    async def close(self) -> None:
        """Nothing kept: an engine that starts early says otherwise."""

    async def run(self, inputs: RunInputs) -> AgentResult:
        """Run one linear conversation and say how it ended."""
        return await drive(inputs, self.name, self.detection, self._session_factory, self.ahead)

    async def run_task(self, inputs: TaskRunInputs) -> AgentResult:
        """Run one orchestrator seed or task conversation and say how it ended."""
        return await drive(inputs, self.name, self.detection, self._session_factory, self.ahead)


async def reap(ends: list[asyncio.Future[Any]]) -> None:
    """Wait for the engine processes a run's sessions killed and left ending (their memory
    freed while the run closed: a large Node process takes tens of milliseconds to go), five
    seconds at most: killed, and in the kernel's hands, they are not waited for further."""
    waiting, ends[:] = list(ends), []
    if waiting:
        _, stuck = await asyncio.wait(waiting, timeout=5)
        for end in stuck:
            end.cancel()


async def drive(
    inputs: RunInputs,
    engine: str,
    detection: DetectionPolicy,
    open_session: SessionFactory,
    ahead: Timeline | None = None,
) -> AgentResult:
    """One conversation on one engine, from start to its one ending."""
    run = RunState(inputs, engine, skill_markers=detection.skill_markers(inputs))
    if inputs.spinner_message:
        inputs.sink(SpinnerStarted(inputs.spinner_message))
    proxy = _proxy(inputs, ahead)
    watchdog = EngineWatchdog(engine, inputs.engine_timeout, lambda: None)
    try:
        async with proxy:
            calls = inputs.activity.session() if inputs.activity is not None else None
            session = open_session(_launch(run, proxy, calls))
            watchdog.pid = lambda: session.pid
            try:
                await session.start()
                inputs.engine_settled()
                inputs.sink(LogLine(f"the {engine} engine is ready", "debug"))
                session.subscribe(RunListener(run.latch, run.output))
                session.subscribe(watchdog)
                if calls is not None:
                    session.subscribe(calls)
                result = await _Conversation(session, run, detection, proxy, watchdog).run()
            finally:
                await _close(session)
    except EngineError as exc:
        result = endings.interrupted(run) or endings.engine_failed(run, str(exc))
    except asyncio.CancelledError:
        # Cancelled from outside (the orchestrator ending the run because another task
        # stopped) after this run's own marker or violation had latched: its ending is that
        # stop, with its own reason and time, so the first latched decides.
        if (latched := endings.interrupted(run)) is None:
            raise
        result = latched
    usage = proxy.meter.usage(
        inputs.model,
        inputs.prices,
        # The engine's error for a request refused once the budget was spent is no turn (the
        # turn budget does not count it either).
        turns=max(0, run.output.assistant_turns - proxy.meter.refused),
        tool_seconds=round(watchdog.tool_seconds, 3),
        wall_seconds=round(time.monotonic() - run.started, 3),
    )
    return replace(result, usage=usage)


def _deadline(run: RunState) -> asyncio.TimerHandle | None:
    """The run's time budget as a deadline: when it passes, the turn is stopped, the command
    running in it too, and the run ends as a budget stop (not only at its next request)."""
    spend = run.inputs.spend
    left = spend.time_left() if spend is not None else None
    if spend is None or left is None:
        return None
    return asyncio.get_running_loop().call_later(
        max(0.0, left), lambda: run.time_is_up(spend.out_of_time())
    )


async def _close(session: AgentSession) -> None:
    """Close the session, leaving no process behind. A cancellation that arrives meanwhile
    (the orchestrator stopping a task that was already closing) waits for the teardown."""
    teardown = asyncio.ensure_future(session.close())
    try:
        await asyncio.shield(teardown)
    except asyncio.CancelledError:
        await teardown
        raise


def _proxy(inputs: RunInputs, ahead: Timeline | None) -> GatewayProxy:
    gateway = inputs.gateway
    return GatewayProxy(
        gateway.url,
        gateway.key,
        policy=RetryPolicy(max_retries=gateway.retries),
        idle_timeout=gateway.idle_timeout,
        notify=lambda message: inputs.sink(SpinnerMessage(message)),
        spend=inputs.spend,
        ahead=ahead,
    )


def _launch(run: RunState, proxy: GatewayProxy, calls: SessionCalls | None) -> EngineLaunch:
    inputs = run.inputs
    return EngineLaunch(
        project_dir=inputs.project_dir,
        model=inputs.model,
        api=inputs.gateway.api,
        proxy_url=proxy.url,
        token=proxy.token,
        gate=ToolGate(
            run.tools(), run.fence, run.on_decision, run.tools_closed, calls, inputs.tools_ready
        ),
        system_prompt=runtime_notes(todo_list=inputs.todo_list),
        shell="bash" not in run.fence.disallowed_tools,
        sandbox=inputs.sandbox,
        engine_timeout=inputs.engine_timeout,
        log=lambda line: inputs.sink(LogLine(f"[{run.engine}] {line}", "debug")),
        thinking=lambda: proxy.thinking(THINKING_AFTER_S),
    )


class _Conversation:
    """The turns of one run on one session."""

    def __init__(
        self,
        session: AgentSession,
        run: RunState,
        detection: DetectionPolicy,
        proxy: GatewayProxy,
        watchdog: EngineWatchdog,
    ) -> None:
        self.session, self.run_state, self.detection = session, run, detection
        self.proxy, self.watchdog = proxy, watchdog

    async def run(self) -> AgentResult:
        """Prompt, nudge while the work is open, remark, classify."""
        run = self.run_state
        deadline = _deadline(run)  # the work's, not the remark's
        try:
            end = await self._turn(run.inputs.prompt)
            nudge, most = run.nudge()
            nudges = 0
            while end.stop_reason != "error" and run.may_continue() and nudges < most:
                nudges += 1
                run.inputs.sink(LogLine(f"work still open, nudge {nudges}/{most}"))
                end = await self._turn(nudge)
        finally:
            if deadline is not None:
                deadline.cancel()
        if (ending := endings.interrupted(run)) is not None:
            return ending
        if self.proxy.over_budget is not None:
            return endings.over_budget(run, self.proxy.over_budget)
        if end.stop_reason == "error":  # the stream wizard cut, else the gateway's own words
            proxy = self.proxy
            message = (
                proxy.fault or proxy.last_error or end.error_message or "the model request failed"
            )
            return endings.failed(run, message)
        if run.task is not None:  # the queue, not the harness, says whether the task reported
            return endings.completed(run, await self.session.stats())
        await self._remark()
        if self.detection.remark_markers and (ending := endings.interrupted(run)) is not None:
            return ending
        return endings.guard(run) or endings.succeeded(run, await self.session.stats())

    async def _turn(self, text: str) -> PromptResult:
        """Prompt, and abort the turn the moment the run halts (a marker, a violation).

        A reply the gateway edge cut as incomplete ends the turn as an error, whatever the
        engine made of it: a truncated reply is never a finished turn.
        """
        run, session = self.run_state, self.session
        prompt = asyncio.ensure_future(self.watchdog.watch(session.prompt(text)))
        fired = asyncio.ensure_future(run.halt.wait())
        try:
            await asyncio.wait({prompt, fired}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:  # the run is stopped from outside: closing aborts it
            prompt.cancel()
            raise
        finally:
            fired.cancel()
        if run.ending() and run.inputs.activity is not None:  # the close's work starts now
            run.inputs.activity.ending()
        if not prompt.done():
            await session.abort()
        try:
            end = await prompt
        except EngineError:
            if not run.halt.is_set():
                raise
            return PromptResult("aborted")
        if self.proxy.fault is not None and not run.halt.is_set():
            return PromptResult("error", self.proxy.fault)
        return end

    async def _remark(self) -> None:
        """The remark reply: not a work turn; what it may still end is the policy's."""
        run = self.run_state
        run.enter_remark(markers_count=self.detection.remark_markers)
        try:
            await self._turn(REMARK_INSTRUCTION)
        except EngineError as exc:
            run.inputs.sink(LogLine(f"[{run.engine}] remark request failed: {exc}", "warning"))
