"""One run of a plan: its stages, in order, on one exit stack, and its outcome finished in one
place, however it ends.

lock → workspace (a preview's copy) → sandbox → engine → journal → sequence → verification →
record; whether the program fits the project is read beside the first stages, and a program
that does not fit ends the run `not_applicable` before the journal or the sequence; the
engine's stage (its check, then its start where its harness starts it early)
runs alongside the workspace and the sandbox, the journal's first snapshot alongside the
sequence's start (its skill's install, and every tool call, wait for it), and the engine
runs nothing of the agent's until the sequence gives it its launch. Expected endings come
back as an `Outcome`; a cancellation (Ctrl-C, a signal) is recorded with what the run used,
then passes on; any other exception in the sequence becomes a failed `Outcome`, so the CLI
always has one to report.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from contextlib import ExitStack
from dataclasses import asdict, replace
from pathlib import Path

from wizard.ahead import Timeline
from wizard.errors import EngineError
from wizard.events import (
    AnalyticsEvent,
    EventRecorder,
    EventSink,
    LogLine,
    RunStarted,
    SpinnerMessage,
    SpinnerStarted,
    SpinnerStopped,
)
from wizard.journal.lock import project_lock
from wizard.logs import logger
from wizard.outcome import Outcome, Outro, Tally
from wizard.runner.fitting import not_applicable_outro, unfit
from wizard.runner.harness.activity import ToolActivity
from wizard.runner.harness.proxy import make_client_ahead
from wizard.runner.harness.registry import make_harness
from wizard.runner.harness.types import Harness
from wizard.runner.harness.usage import RunSpend
from wizard.runner.journaling import RunJournal
from wizard.runner.plan import RunPlan
from wizard.runner.previewing import Workspace, as_preview, prune_expired_previews
from wizard.runner.sandboxing import RunSandbox
from wizard.runner.sequence.context import RunContext
from wizard.runner.sequence.linear import run_linear
from wizard.runner.sequence.orchestrator.sequence import run_orchestrator
from wizard.runner.verification import checks_wrote, verified
from wizard.tools.project import AskFunction

log = logger(__name__)


class Run:
    """One run of `plan`, its events into `sink`."""

    def __init__(
        self,
        plan: RunPlan,
        sink: EventSink,
        *,
        ask: AskFunction | None = None,
        run_id: str | None = None,
        harness: Harness | None = None,
        tally: Tally | None = None,
        ahead: Timeline | None = None,
    ) -> None:
        self.plan, self.sink = plan, sink
        # The work taken ahead of the moment that needs it: what `__main__` started with the
        # process, and what the run starts; what nothing took is discarded as it ends.
        self.ahead = ahead or Timeline()
        # The outcome so far: every ending is made from it (a cancelled run's by the caller).
        self.tally = tally or Tally()
        # The user's answers to `wizard_ask`: what a proof holds the agent's record to.
        self.answers: list[tuple[str, str]] = []
        self.ask = self._recorded(ask) if ask is not None else None
        self.run_id = run_id or uuid.uuid4().hex[:12]
        self.harness = harness
        self.spend = RunSpend(plan.budget, plan.binding.model, plan.prices)
        self.journal: RunJournal | None = None

    def note(self, line: str) -> None:
        self.sink(LogLine(line))

    def _recorded(self, ask: AskFunction) -> AskFunction:
        """`ask`, keeping each question the user answered with the answer."""

        async def asked(questions: list[str]) -> list[str] | None:
            answers = await ask(questions)
            self.answers.extend((q, a) for q, a in zip(questions, answers or [], strict=False)
                                if a.strip())  # fmt: skip
            return answers

        return asked

    async def __call__(self) -> Outcome:
        """Run every stage; the outcome."""
        plan = self.plan
        self.sink(_resolved(plan))
        harness = self.harness or make_harness(plan.binding.harness, self.ahead)
        project = plan.project.resolve()
        preparing: asyncio.Task[EngineError | None] | None = None
        try:
            with ExitStack() as stages:
                # One run per project: a second one is refused here, before anything is touched.
                stages.enter_context(project_lock(project, self.run_id, note=self.note))
                # The engine is checked, then started, while the run gets the rest ready; so is
                # the gateway's client (its TLS context, the modules of its first connection).
                make_client_ahead(self.ahead)
                preparing = asyncio.create_task(self._engine(harness))
                # Whether the program fits the project at all: read while the rest gets ready.
                fitting = asyncio.ensure_future(asyncio.to_thread(unfit, plan.program, project))
                await asyncio.sleep(0)
                prune_expired_previews(plan.environ, self.note, project)
                workspace = self._workspace(project)
                sandbox = self._sandbox(workspace)
                stages.callback(sandbox.close)
                self.sink(
                    RunStarted(plan.program.id, str(project), plan.binding.harness,
                               plan.binding.sequence, plan.binding.model, plan.gateway.url,
                               sandbox.policy is not None, preview=workspace.preview)
                )  # fmt: skip
                context = self._context(workspace, sandbox)
                if (gap := await fitting) is not None:
                    outcome = self._not_applicable(context, project, gap)
                elif (failed := await preparing) is None:
                    outcome = await self._work(harness, context, workspace)
                else:
                    outcome = self._not_ready(context, failed)
        finally:
            if preparing is not None and not preparing.done():
                preparing.cancel()
                with contextlib.suppress(asyncio.CancelledError, EngineError):
                    await preparing
            await harness.close()
            self.ahead.close()
            for line in self.ahead.said:
                log.debug(line)
        return self._finished(outcome, sandbox)

    def _workspace(self, project: Path) -> Workspace:
        """Where the agent works: the project, or a preview's copy (its journal opened first,
        since it makes the copy)."""
        plan = self.plan
        if plan.preview:
            self.journal = RunJournal.open_preview(
                project, self.run_id, plan.program.id, plan.binding, self.sink, self.ahead
            )
        return Workspace.of(project, self.journal)

    def _sandbox(self, workspace: Workspace) -> RunSandbox:
        plan = self.plan
        try:
            return RunSandbox.open(workspace, self.run_id, plan.program.network_hosts,
                                   plan.environ, self.sink, off=not plan.sandbox)  # fmt: skip
        except BaseException:  # a preview that cannot run leaves nothing behind
            if self.journal is not None:
                self.journal.abandon()
            raise

    def _context(self, workspace: Workspace, sandbox: RunSandbox) -> RunContext:
        plan = self.plan
        # With the OS sandbox, nothing of the agent's outlives its tool call: the journal
        # lists the dependency folders ahead once the last call ended (`RunJournal`).
        held = sandbox.policy is not None and not workspace.preview
        return RunContext(
            program=plan.program,
            project_dir=workspace.root,
            read_only=workspace.mounts,
            preview=workspace.preview,
            binding=plan.binding,
            gateway=plan.gateway,
            skills=plan.skills,
            sink=self.sink,
            ask=self.ask,
            engine_timeout=plan.engine_timeout,
            prices=plan.prices,
            spend=self.spend,
            run_id=self.run_id,
            max_parallel=plan.max_parallel,
            sandbox=sandbox.policy,
            resume_from=plan.resume_from,
            activity=ToolActivity() if held else None,
            tally=self.tally,
        )

    async def _engine(self, harness: Harness) -> EngineError | None:
        """The engine, ready (installed on first use, its files checked, started where its
        harness starts it early); what stopped it if it is not."""
        preparing = _Preparing(self.sink, self.plan.binding.harness)
        try:
            await harness.prepare(preparing, self.ahead)
        except EngineError as exc:
            preparing.done(ready=False)
            return exc
        preparing.done(ready=True)
        return None

    def _not_ready(self, context: RunContext, failed: EngineError) -> Outcome:
        """The failed outcome of a run whose engine could not be made ready."""
        if self.journal is not None:
            self.journal.abandon()
        engine = self.plan.binding.harness
        outro = Outro("error", f"The {engine} engine is not available", str(failed))
        return context.outcome("failed", outro, reason=failed.message)

    def _not_applicable(self, context: RunContext, project: Path, gap: str) -> Outcome:
        """The outcome of a run whose program does not fit the project: nothing was done."""
        if self.journal is not None:  # a preview's copy, made for nothing
            self.journal.abandon()
        outro = not_applicable_outro(self.plan.program, project, gap)
        self.sink(AnalyticsEvent("program not applicable",
                                 {"program": self.plan.program.id, "reason": gap}))  # fmt: skip
        return context.outcome("not_applicable", outro, reason=gap)

    async def _work(self, harness: Harness, context: RunContext, workspace: Workspace) -> Outcome:
        """The sequence, journaled, then verified; a cancellation is recorded with what the
        run used so far, then passes on. The journal's first snapshot is taken while the
        sequence starts its engine (a new project's once it has started: `_journal`; the
        skill's install, and every tool call, wait for it)."""
        plan = self.plan
        settled = asyncio.Event()
        opening = asyncio.ensure_future(self._journal(workspace, context.activity, settled))
        sequenced = replace(context, snapshot=opening, engine_settled=settled.set)
        try:
            outcome = await _run_sequence(sequenced, harness)
        except asyncio.CancelledError:
            settled.set()  # cut before its conversation began: no engine will start
            if "usage" not in self.tally.parts:  # an orchestrator's queue added its own
                self.tally.add(usage=self.spend.total())
            journal = await opening  # a snapshot under way is finished, then recorded so
            journal.amend(journal.finish("cancelled"), usage=asdict(self.tally.parts["usage"]))
            raise
        settled.set()  # as above, a sequence that ended before its conversation
        journal = await opening
        record = journal.finish(outcome.status, outcome.error_type)
        try:
            outcome = await verified(outcome, context, journal, record, plan.verify == "off",
                                     full=plan.verify == "full",
                                     answers=tuple(self.answers))  # fmt: skip
        except asyncio.CancelledError:  # interrupted while checking: the run ends cancelled
            record, _ = journal.after_checks(record, "cancelled")
            journal.amend(record, usage=asdict(self.spend.total()))
            raise
        ran = outcome.verification
        if ran is not None and (ran.checks or any(p.kind == "runtime" for p in ran.proofs)):
            record, written = journal.after_checks(record, outcome.status)
            if written:
                outcome = replace(outcome, warnings=(*outcome.warnings, checks_wrote(written)))
        # What the record did not know when the run ended: what it used, and how the checks
        # ended it (when the snapshot after them could not say so).
        noted: dict[str, object] = {"usage": asdict(outcome.usage)} if outcome.usage else {}
        if record is not None and record.status != outcome.status:
            noted["status"] = outcome.status
        if noted:
            journal.amend(record, **noted)
        if journal.warning is not None:
            outcome = replace(outcome, warnings=(*outcome.warnings, journal.warning))
        return outcome

    async def _journal(
        self, workspace: Workspace, activity: ToolActivity | None, settled: asyncio.Event
    ) -> RunJournal:
        """The run's journal (a preview's was opened with its copy), watching the run's tool
        calls; its first snapshot taken in a thread, whose events are said once it ends. A
        project's first snapshot, which reads and stores every file, waits until the engine
        has started (or the conversation ended without it: `RunContext.engine_settled`): it
        would slow the engine's start (on the anthropic harness it shares Python's lock with
        the SDK's import), and the engine's first request needs none of it."""
        if self.journal is None:
            if RunJournal.reads_every_file(workspace.project):
                await settled.wait()
            plan, said = self.plan, EventRecorder()
            self.journal = await asyncio.to_thread(
                RunJournal.open, workspace.project, self.run_id, plan.program.id, plan.binding,
                said, self.ahead,
            )  # fmt: skip
            self.journal.sink = self.sink
            for event in said.events:
                self.sink(event)
        self.journal.watch(activity)
        return self.journal

    def _finished(self, outcome: Outcome, sandbox: RunSandbox) -> Outcome:
        """The outcome as the user reads it: a preview's said as one, the sandbox's warnings
        first."""
        preview = self.journal if self.plan.preview else None
        if preview is not None and preview.record is not None:  # a preview that ran
            outcome = as_preview(outcome, self.plan.program.label)
        return replace(outcome, warnings=(*sandbox.warnings, *outcome.warnings))


def _resolved(plan: RunPlan) -> AnalyticsEvent:
    binding = plan.binding
    properties = {
        "program": plan.program.id,
        "harness": binding.harness,
        "sequence": binding.sequence,
        "model": binding.model,
        **{f"{key}_source": value for key, value in binding.sources.items()},
    }
    return AnalyticsEvent("switchboard resolved", properties)


class _Preparing:
    """What the engine's preparation says (an install on first use takes a while): into the
    log, and on a spinner of its own, so the screen is never still while it works."""

    def __init__(self, sink: EventSink, engine: str) -> None:
        self.sink, self.engine, self.spinning = sink, engine, False

    def __call__(self, line: str) -> None:
        self.sink(LogLine(line))
        said = f"Preparing the {self.engine} engine: {line}"
        self.sink(SpinnerMessage(said) if self.spinning else SpinnerStarted(said))
        self.spinning = True

    def done(self, *, ready: bool) -> None:
        if self.spinning:
            said = "is ready" if ready else "could not be prepared"
            self.sink(SpinnerStopped(f"The {self.engine} engine {said}"))
            self.spinning = False


async def _run_sequence(context: RunContext, harness: Harness) -> Outcome:
    """The sequence's outcome; an unexpected exception becomes a failed one."""
    program = context.program
    sequence = run_orchestrator if context.binding.sequence == "orchestrator" else run_linear
    try:
        return await sequence(context, harness)
    except Exception as exc:
        log.exception("run failed unexpectedly")
        outro = Outro(
            "error",
            f"{program.label} failed unexpectedly",
            f"{type(exc).__name__}: {exc}\n\nNothing was reported as set up. Please report this "
            "to wizard@posthog.com with the log file.",
        )
        return context.outcome("failed", outro, reason=str(exc))
