"""The run pipeline: `run_program` resolves the binding and the gateway, then runs a sequence.

Expected endings come back as an `Outcome`. Usage and configuration errors are raised (the
CLI turns them into exit code 2); any other exception becomes a failed `Outcome`, so the CLI
always has one to report.
"""

from __future__ import annotations

import asyncio
import logging
import tempfile
import uuid
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from wizard.config import number_setting
from wizard.engines.claude import load_sdk
from wizard.errors import EngineError, UsageError
from wizard.events import (
    AnalyticsEvent,
    EventSink,
    LogLine,
    RunStarted,
    SpinnerMessage,
    SpinnerStarted,
    SpinnerStopped,
)
from wizard.journal.lock import project_lock
from wizard.journal.runs import journal_keep
from wizard.outcome import Outcome, Outro
from wizard.programs.registry import did_you_mean
from wizard.programs.types import ProgramBinding, ProgramConfig
from wizard.runner.gateway import GatewayFlags, resolve_gateway
from wizard.runner.harness.anthropic.harness import AnthropicHarness
from wizard.runner.harness.pi.harness import PiHarness
from wizard.runner.harness.types import GatewaySettings, Harness
from wizard.runner.harness.usage import BudgetFlags, RunSpend, price_table, run_budget
from wizard.runner.journaling import RunJournal
from wizard.runner.previewing import Workspace, as_preview, prune_expired_previews
from wizard.runner.sandboxing import RunSandbox
from wizard.runner.sequence.context import DEFAULT_MAX_PARALLEL, RunContext
from wizard.runner.sequence.linear import run_linear
from wizard.runner.sequence.orchestrator.sequence import run_orchestrator
from wizard.runner.switchboard import Binding, resolve_binding
from wizard.runner.verification import checks_wrote, verified
from wizard.skills.sources import SkillFetchError, SkillSource
from wizard.tools.project import AskFunction
from wizard.tools.sandbox import sandbox_enabled

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunRequest:
    """What the CLI asks for: a program on a project, with flags and environment."""

    program: ProgramConfig
    project_dir: Path
    skills: SkillSource
    sink: EventSink
    environ: Mapping[str, str]
    binding: ProgramBinding = field(default_factory=ProgramBinding)
    gateway: GatewayFlags = field(default_factory=GatewayFlags)
    ask: AskFunction | None = None
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    # `--max-parallel`; unset, `WIZARD_MAX_PARALLEL_TASKS`, else 3.
    max_parallel: int | None = None
    # `--no-sandbox`: commands run with the fence alone.
    no_sandbox: bool = False
    # Skip the checks after the agent's work (`--no-verify`): the outcome warns of it.
    no_verify: bool = False
    # `--verify full`: the project's own test and build scripts are checks too.
    verify_full: bool = False
    # `--max-turns`, `--max-cost`, `--max-time`; unset, `WIZARD_MAX_TURNS` / `_COST` / `_TIME`.
    budget: BudgetFlags = field(default_factory=BudgetFlags)
    # `wizard resume`: carry on the queue of this interrupted orchestrator run.
    resume_from: str | None = None
    # `--preview`: the run works on a copy of the project, applied later (`wizard apply`).
    preview: bool = False


def make_harness(name: str) -> Harness:
    """The harness registered under `name` (the switchboard has checked it)."""
    if name == "pi":
        return PiHarness()
    if name == "anthropic":
        load_sdk()  # missing: a usage error with the install command, before anything starts
        return AnthropicHarness()
    raise UsageError(f"The harness '{name}' is not available.")


def _resolved(program: ProgramConfig, binding: Binding) -> AnalyticsEvent:
    properties = {
        "program": program.id,
        "harness": binding.harness,
        "sequence": binding.sequence,
        "model": binding.model,
        **{f"{key}_source": value for key, value in binding.sources.items()},
    }
    return AnalyticsEvent("switchboard resolved", properties)


def check_project(project: Path) -> None:
    """The project must be a folder the agent can write to; a `UsageError` naming the fix."""
    if not project.exists():
        raise UsageError(
            f"Project directory {project} does not exist.",
            "Pass --project DIR with an existing directory.",
        )
    if not project.is_dir():
        raise UsageError(
            f"{project} is not a directory.", "Pass --project DIR with the project's folder."
        )
    try:  # as the agent would: root ignores permission bits, not read-only mounts
        with tempfile.NamedTemporaryFile(dir=project, prefix=".wizard-write-check-"):
            pass
    except OSError as exc:
        raise UsageError(
            f"The project {project} cannot be written: {exc.strerror}.",
            "The agent edits files there: make the folder writable, then run again.",
        ) from exc


def check_skill(skills: SkillSource, skill_id: str) -> None:
    """The skill must exist and be well formed where it will come from, before a run starts."""
    try:
        offered = [entry.id for entry in skills.menu()]
    except SkillFetchError:
        return  # the install step reports an unreadable menu, with its fix
    if skill_id not in offered:
        raise UsageError(
            f"Unknown skill '{skill_id}'.",
            did_you_mean(skill_id, offered) + " Run `wizard programs` to list the bundled "
            "skills, or point --skills-dir at a folder that holds it.",
        )
    skills.check(skill_id)


async def run_program(request: RunRequest, harness: Harness | None = None) -> Outcome:
    """Run one program and say how it ended."""
    program = request.program
    check_project(request.project_dir)
    binding = resolve_binding(program, request.binding, request.environ)
    check_skill(request.skills, program.skill)
    gateway = resolve_gateway(request.gateway, request.environ)
    if binding.harness == "anthropic" and gateway.api != "anthropic-messages":
        raise UsageError(
            "The anthropic harness speaks only the Anthropic Messages API; the gateway is "
            f"{gateway.api}.",
            "Use --harness pi for an OpenAI-compatible gateway, or point the gateway at an "
            "Anthropic Messages endpoint.",
        )
    prices = price_table(request.environ)
    budget = run_budget(request.budget, request.environ, binding.model, prices)
    journal_keep(request.environ)  # a bad value is refused now, not after the agent's run
    spend = RunSpend(budget, binding.model, prices)
    request.sink(_resolved(program, binding))
    harness = harness or make_harness(binding.harness)
    project = request.project_dir.resolve()
    # One run per project: a second one is refused here, before anything is touched.
    with project_lock(project, request.run_id, note=lambda line: request.sink(LogLine(line))):
        prune_expired_previews(request.environ, lambda line: request.sink(LogLine(line)), project)
        journal, workspace, sandbox = _open_workspace(request, project, binding)
        request.sink(
            RunStarted(program.id, str(project), binding.harness, binding.sequence,
                       binding.model, gateway.url, sandbox.policy is not None,
                       preview=workspace.preview)
        )  # fmt: skip
        try:
            outcome = await _run(
                request, binding, gateway, harness, sandbox, spend, workspace, journal
            )
        finally:
            sandbox.close()
    if journal is not None and journal.record is not None:  # a preview that ran
        outcome = as_preview(outcome, program.label)
    return replace(outcome, warnings=(*sandbox.warnings, *outcome.warnings))


def _open_workspace(
    request: RunRequest, project: Path, binding: Binding
) -> tuple[RunJournal | None, Workspace, RunSandbox]:
    """Where the agent works, and its sandbox; a preview's journal, opened first because it
    makes the copy the sandbox and the agent work in."""
    journal = None
    if request.preview:
        if not sandbox_enabled(request.environ, request.no_sandbox):
            raise UsageError(
                "A preview needs the OS sandbox: without it the agent's commands run as you, "
                "and could change the project the preview promises to leave untouched.",
                "Leave out --no-sandbox (and WIZARD_SANDBOX=off), or run without --preview.",
            )
        journal = RunJournal.open_preview(
            project, request.run_id, request.program.id, binding, request.sink
        )
    workspace = Workspace.of(project, journal)
    try:
        sandbox = RunSandbox.open(
            workspace,
            request.run_id,
            request.program.network_hosts,
            request.environ,
            request.sink,
            off=request.no_sandbox,
        )
    except BaseException:  # a preview that cannot run leaves nothing behind
        if journal is not None:
            journal.abandon()
        raise
    return journal, workspace, sandbox


async def _run(
    request: RunRequest,
    binding: Binding,
    gateway: GatewaySettings,
    harness: Harness,
    sandbox: RunSandbox,
    spend: RunSpend,
    workspace: Workspace,
    journal: RunJournal | None,
) -> Outcome:
    context = RunContext(
        program=request.program,
        project_dir=workspace.root,
        read_only=workspace.mounts,
        preview=workspace.preview,
        binding=binding,
        gateway=gateway,
        skills=request.skills,
        sink=request.sink,
        ask=request.ask,
        engine_timeout=number_setting(request.environ, "WIZARD_ENGINE_TIMEOUT", 150.0, float),
        prices=spend.prices,
        spend=spend,
        run_id=request.run_id,
        max_parallel=_max_parallel(request),
        sandbox=sandbox.policy,
        resume_from=request.resume_from,
    )
    preparing = _Preparing(request.sink, binding.harness)
    try:
        await harness.prepare(preparing)
    except EngineError as exc:
        preparing.done(ready=False)
        if journal is not None:
            journal.abandon()
        outro = Outro("error", f"The {binding.harness} engine is not available", str(exc))
        return context.outcome("failed", outro, reason=exc.message)
    preparing.done(ready=True)
    if journal is None:
        journal = RunJournal.open(
            workspace.project, request.run_id, request.program.id, binding, request.sink
        )
    try:
        outcome = await _run_sequence(context, harness)
    except asyncio.CancelledError:  # what it used so far is in its record (and its outcome)
        journal.amend(journal.finish("cancelled"), usage=asdict(spend.total()))
        raise
    record = journal.finish(outcome.status, outcome.error_type)
    try:
        outcome = await verified(
            outcome, context, journal, record, request.no_verify, full=request.verify_full
        )
    except asyncio.CancelledError:  # interrupted while checking: the run ends cancelled
        record, _ = journal.after_checks(record, "cancelled")
        journal.amend(record, usage=asdict(spend.total()))
        raise
    ran = outcome.verification
    if ran is not None and (ran.checks or any(p.kind == "runtime" for p in ran.proofs)):
        record, written = journal.after_checks(record, outcome.status)
        if written:
            outcome = replace(outcome, warnings=(*outcome.warnings, checks_wrote(written)))
    # What the journal's record did not know when the run ended: what it used, and how the
    # checks ended it (when the snapshot after them could not say so).
    noted: dict[str, object] = {"usage": asdict(outcome.usage)} if outcome.usage else {}
    if record is not None and record.status != outcome.status:
        noted["status"] = outcome.status
    if noted:
        journal.amend(record, **noted)
    if journal.warning is not None:
        outcome = replace(outcome, warnings=(*outcome.warnings, journal.warning))
    return outcome


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


def _max_parallel(request: RunRequest) -> int:
    """The orchestrator's limit on task runs at once: at least 1."""
    if request.max_parallel is not None:
        value = request.max_parallel
    else:
        value = number_setting(
            request.environ, "WIZARD_MAX_PARALLEL_TASKS", DEFAULT_MAX_PARALLEL, int
        )
    if value < 1:
        raise UsageError(
            f"The orchestrator needs at least one task at a time (got {value}).",
            "Pass --max-parallel N (or set WIZARD_MAX_PARALLEL_TASKS) with N ≥ 1.",
        )
    return value


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
