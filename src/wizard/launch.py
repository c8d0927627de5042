"""Running a program from the command line: sinks, log file, analytics, Ctrl-C.

`launch()` wires the UI (live view or `--ci` JSON Lines), the run's log file and analytics
to the runner, runs it, shows the outro and returns the `Outcome`. It never exits the
process; `cli.py` maps the outcome to an exit code. Usage and configuration errors are
raised as `WizardError`.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextlib import AbstractAsyncContextManager, ExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path, PurePosixPath
from typing import Literal, cast

from wizard.analytics import analytics_from_env
from wizard.errors import UsageError, WizardError
from wizard.events import EventBus, EventSink, LogLine
from wizard.journal import Journal
from wizard.names import shown
from wizard.outcome import AgentErrorType, Outcome, Outro, Usage
from wizard.processes import become_subreaper, stop_descendants
from wizard.programs.types import ProgramBinding, ProgramConfig
from wizard.runlog import RunLog
from wizard.runner import RunRequest, run_program
from wizard.runner.gateway import GatewayFlags
from wizard.runner.harness.usage import BudgetFlags
from wizard.runner.sequence.orchestrator.sequence import saved_tasks
from wizard.skills.sources import (
    BundledSkills,
    ChainedSkills,
    DirectorySkills,
    RemoteSkills,
    SkillSource,
)
from wizard.tools.code_names import runs_code
from wizard.tools.paths import is_env_name
from wizard.ui.ci import CiOutput
from wizard.ui.console import make_console
from wizard.ui.live import LiveView
from wizard.ui.outro import print_outro

Services = Callable[[], AbstractAsyncContextManager[Mapping[str, str]]]


@dataclass(frozen=True)
class LaunchOptions:
    """What the user asked for on the command line."""

    project: Path
    binding: ProgramBinding
    gateway: GatewayFlags
    skills_dir: Path | None = None
    ci: bool = False
    verbose: bool = False
    max_parallel: int | None = None
    no_sandbox: bool = False
    no_verify: bool = False
    verify_full: bool = False
    budget: BudgetFlags = field(default_factory=BudgetFlags)
    # `wizard resume`: the interrupted orchestrator run to carry on.
    resume_from: str | None = None
    # `--preview`: the run works on a copy (unset: `WIZARD_PREVIEW`, else no); `--patch-out`:
    # the preview's change written as a patch.
    preview: bool | None = None
    patch_out: Path | None = None


def new_run_id() -> str:
    """A fresh id for one run: names its log file and tags its events and outcome."""
    return uuid.uuid4().hex[:12]


def skill_source(skills_dir: Path | None, environ: Mapping[str, str]) -> SkillSource:
    """Local folder first, then the remote menu, then the bundled skills."""
    sources: list[SkillSource] = []
    setting = "--skills-dir" if skills_dir else "WIZARD_SKILLS_DIR"
    local = skills_dir or (
        Path(environ["WIZARD_SKILLS_DIR"]) if environ.get("WIZARD_SKILLS_DIR") else None
    )
    if local is not None:
        if not local.is_dir():
            raise UsageError(
                f"The skills folder {local} ({setting}) does not exist.",
                f"Point {setting} at a folder of skills (one sub-folder with a SKILL.md each), "
                "or leave it unset to use the bundled skills.",
            )
        sources.append(DirectorySkills(local))
    if environ.get("WIZARD_SKILLS_URL"):
        sources.append(RemoteSkills(environ["WIZARD_SKILLS_URL"]))
    sources.append(BundledSkills())
    return ChainedSkills(sources)


def usage_outcome(program_id: str, error: WizardError) -> Outcome:
    """The outcome of a run refused before it started (bad input or configuration)."""
    outro = Outro("error", error.message, error.hint)
    return Outcome(
        "usage_error", program_id, reason=error.message, outro=outro, run_id=new_run_id()
    )


def report_usage_error(outcome: Outcome, ci: bool, outcome_json: Path | None) -> None:
    """Say why a run was refused: on stderr, and as the `--ci` outcome line and JSON file."""
    console = make_console(sys.stderr)
    console.print(f"error: {outcome.reason}", markup=False, soft_wrap=True)
    if outcome.outro is not None and outcome.outro.body:
        console.print(outcome.outro.body, markup=False, soft_wrap=True)
    _for_machines(outcome, ci, outcome_json)


def _for_machines(outcome: Outcome, ci: bool, outcome_json: Path | None) -> None:
    """The outcome of a run that never began, as the `--ci` line and the JSON file."""
    if ci:
        CiOutput(sys.stdout, outcome.run_id or "").outcome(outcome)
    if outcome_json is not None:
        outcome_json.write_text(outcome.to_json() + "\n")


def with_journal(outcome: Outcome, project: Path) -> Outcome:
    """The outcome with what its run changed, as the journal recorded it."""
    if outcome.run_id is None or not project.is_dir():
        return outcome
    try:
        journal = Journal(project)
        record = journal.get(outcome.run_id)
    except (OSError, ValueError):
        return outcome
    if record is None:
        return outcome
    try:
        edits = journal.edits(record)
    except (WizardError, OSError):
        edits = None
    code = [path for path in record.changed if runs_code(path)]
    warnings = (*outcome.warnings, wrote_code(code, outcome.run_id)) if code else outcome.warnings
    if outcome.status == "cancelled":  # interrupted: what it ran on and used, from its record
        outcome = replace(
            outcome,
            harness=outcome.harness or record.harness,
            sequence=outcome.sequence or record.sequence,
            usage=outcome.usage or (Usage(**record.usage) if record.usage else None),
        )
    return replace(
        outcome,
        warnings=warnings,
        project=str(project.resolve()),
        changed_files=tuple(record.changed),
        unjournaled_changes=(*record.heavy_changed, *record.large_changed),
        dependency_changes=dict(record.dependency_changes),
        repositories_added=tuple(record.repos_added),
        edits=edits.to_dict() if edits is not None else None,
    )


def resumable(outcome: Outcome, run_id: str, project: Path) -> Outcome:
    """An interrupted orchestrator run's screen: where its steps stood, and the command that
    carries it on (finished steps are not run again)."""
    if not outcome.tasks or outcome.outro is None:
        return outcome
    counts: dict[str, int] = {}
    for task in outcome.tasks:
        counts[str(task.get("status"))] = counts.get(str(task.get("status")), 0) + 1
    stood = ", ".join(f"{count} {status}" for status, count in counts.items())
    command = f"wizard resume {run_id} --project {project}"
    body = f"{outcome.outro.body}\n\nSteps: {stood}. Carry it on with `{command}`: the steps "
    body += "that finished are not run again."
    return replace(outcome, outro=replace(outcome.outro, body=body))


def wrote_code(paths: list[str], run_id: str) -> str:
    """The warning for files the run wrote that run code as the user (`code_names`)."""
    named = ", ".join(shown(path) for path in paths[:5])
    more = f" and {len(paths) - 5} more" if len(paths) > 5 else ""
    return (
        f"The run wrote files that run code as you when you commit, install, open the project "
        f"in an editor or enter its folder: {named}{more}. Review them (`wizard diff "
        f"{run_id}`) before you do; `wizard undo {run_id}` takes them back."
    )


def preview_wanted(options: LaunchOptions, environ: Mapping[str, str]) -> bool:
    """Whether the run is a preview: `--preview`/`--no-preview`, else `WIZARD_PREVIEW` (the
    config file's `[run] preview`); `--patch-out` needs one."""
    preview = options.preview
    if preview is None:
        preview = environ.get("WIZARD_PREVIEW", "").strip().lower() in ("1", "true", "yes", "on")
    if options.patch_out is not None and not preview:
        raise UsageError(
            "--patch-out writes a preview's change, and this run is not a preview.",
            "Add --preview (the project is then left untouched), or leave out --patch-out.",
        )
    return preview


def with_patch(outcome: Outcome, project: Path, path: Path) -> Outcome:
    """Write what a preview changed to `path` as a patch `git apply` takes in the project
    (binary files included); environment files are left out, with a warning: a patch is for
    a pull request, and they hold secrets."""
    journal = Journal(project)
    record = journal.get(outcome.run_id or "")
    if record is None or record.after is None:
        return replace(outcome, warnings=(*outcome.warnings, f"No patch written to {path}: "
                                          "the preview's changes were not recorded."))  # fmt: skip
    left_out = [p for p in record.changed if is_env_name(PurePosixPath(p).name)]
    links_out = journal.links_out(record)
    kept = [p for p in record.changed if p not in left_out and p not in links_out]
    path.write_bytes(journal.patch(record, paths=kept).encode(errors="surrogateescape"))
    notes = []
    if left_out:
        notes.append(f"The patch {path} leaves out environment files, which hold secrets: "
                     f"{', '.join(map(shown, left_out))}. `wizard apply {outcome.run_id}` "
                     "writes them.")  # fmt: skip
    if links_out:
        links = ", ".join(f"{shown(p)} -> {shown(t)}" for p, t in links_out.items())
        notes.append(f"The patch {path} leaves out links that lead out of the project: {links}.")
    return replace(outcome, warnings=(*outcome.warnings, *notes))


def cancelled_outcome(
    program: ProgramConfig, binding: ProgramBinding, by: int = signal.SIGINT
) -> Outcome:
    """The outcome of a run the user (or a signal `by`) interrupted."""
    outro = Outro(
        "cancel",
        f"{program.label} cancelled",
        "The run was interrupted and nothing more will run. Files the agent already changed "
        "stay as they are.",
    )
    return Outcome(
        "cancelled", program.id, binding.harness, binding.sequence, outro=outro, signal=by
    )


@contextmanager
def _logging_into(sink: EventSink) -> Iterator[None]:
    """wizard's own log records (a gateway stream cut, a tool that failed) go into the run's
    log as `LogLine`s for the length of the run, not onto the terminal."""

    class ToRunLog(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            level: Literal["debug", "warning", "error"] = "debug"  # the file only
            if record.levelno >= logging.WARNING:  # shown too
                level = "error" if record.levelno >= logging.ERROR else "warning"
            sink(LogLine(self.format(record), level))

    handler, logger = ToRunLog(logging.DEBUG), logging.getLogger("wizard")
    level, logger.level = logger.level, logging.DEBUG
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def report_cancelled_early(program_id: str, ci: bool, outcome_json: Path | None) -> Outcome:
    """Ctrl-C before a run started (while its input was checked): the cancelled panel, and
    the outcome line and file for machines."""
    outro = Outro("cancel", "Cancelled", "Interrupted before the run started: nothing ran.")
    outcome = Outcome(
        "cancelled", program_id, outro=outro, signal=signal.SIGINT, run_id=new_run_id()
    )
    print_outro(make_console(sys.stderr if ci else sys.stdout), outcome)
    _for_machines(outcome, ci, outcome_json)
    return outcome


def launch(
    program: ProgramConfig,
    options: LaunchOptions,
    environ: Mapping[str, str],
    services: Services | None = None,
    after_run: Callable[[Outcome], None] | None = None,
    outcome_json: Path | None = None,
) -> Outcome:
    """Run `program` with the terminal UI (or CI output) and return its outcome.

    `services` may run things for the length of the run inside its event loop (the demo's
    gateway) and give extra environment; `after_run` prints anything after the outro. The
    outcome goes to `outcome_json` before anything is printed: a closed terminal (the user's
    window, a killed tmux session) must not cost the machines their answer.
    """
    options = replace(options, preview=preview_wanted(options, environ))
    run_id = new_run_id()
    console = make_console(sys.stderr if options.ci else sys.stdout)
    ci = CiOutput(sys.stdout, run_id) if options.ci else None
    live = LiveView(console, verbose=options.verbose) if ci is None else None
    view: EventSink = ci if ci is not None else cast(LiveView, live)
    log = RunLog(run_id, on_open=lambda path: console.print(f"[dim]Log file: {path}[/dim]"))
    analytics = analytics_from_env(environ, {"program": program.id, "run_id": run_id})
    bus = EventBus(log, view, *([analytics] if analytics is not None else []))
    with ExitStack() as stack:
        stack.callback(log.close)
        stack.enter_context(_logging_into(bus))
        if analytics is not None:
            stack.callback(analytics.shutdown)
        if live is not None:
            stack.callback(live.close)
        ask = live.ask if live is not None else None
        request = partial(_request, program, options, run_id=run_id, sink=bus, ask=ask)
        outcome = _run_to_the_end(program, options, request, environ, services)
        if orphans := stop_descendants():  # whatever the agent started that outlived pi
            bus(LogLine(f"stopped {len(orphans)} process(es) left by the run", "warning"))
    if outcome.status == "cancelled" and not outcome.tasks:  # interrupted: the queue on disk
        outcome = resumable(replace(outcome, tasks=saved_tasks(run_id)), run_id, options.project)
    outcome = with_journal(replace(outcome, run_id=run_id), options.project)
    if options.patch_out is not None and outcome.preview:
        outcome = with_patch(outcome, options.project, options.patch_out)
    if outcome.error_type is AgentErrorType.ENGINE_FAILURE and outcome.outro is not None:
        body = f"{outcome.outro.body}\n\nLog file: {log.path}"
        outcome = replace(outcome, outro=replace(outcome.outro, body=body))
    if outcome_json is not None:
        outcome_json.write_text(outcome.to_json() + "\n")
    try:
        if ci is not None:
            ci.outcome(outcome)
        print_outro(console, outcome)
        if after_run is not None:
            after_run(outcome)
    except OSError:  # the terminal is gone (EIO, a broken pipe): the outcome is written
        pass
    return outcome


_STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


def _run_to_the_end(
    program: ProgramConfig,
    options: LaunchOptions,
    request: Callable[[Mapping[str, str]], RunRequest],
    environ: Mapping[str, str],
    services: Services | None,
) -> Outcome:
    """Run in an event loop; Ctrl-C, SIGTERM and SIGHUP end it with a clean teardown."""
    become_subreaper()
    caught: list[int] = []
    try:
        return asyncio.run(_run(request, environ, services, caught))
    except (KeyboardInterrupt, asyncio.CancelledError):
        return cancelled_outcome(program, options.binding, caught[0] if caught else signal.SIGINT)


async def _run(
    request: Callable[[Mapping[str, str]], RunRequest],
    environ: Mapping[str, str],
    services: Services | None,
    caught: list[int],
) -> Outcome:
    loop, main = asyncio.get_running_loop(), asyncio.current_task()
    assert main is not None

    def stop(number: int) -> None:
        caught.append(number)
        main.cancel()  # the same teardown as Ctrl-C: abort, stop pi, journal, clean up

    for number in _STOP_SIGNALS:
        loop.add_signal_handler(number, stop, number)
    async with services() if services is not None else _no_services() as extra:
        return await run_program(request({**environ, **extra}))


@asynccontextmanager
async def _no_services() -> AsyncIterator[Mapping[str, str]]:
    yield {}


def _request(
    program: ProgramConfig,
    options: LaunchOptions,
    environ: Mapping[str, str],
    *,
    run_id: str,
    sink: EventSink,
    ask: Callable[[list[str]], Awaitable[list[str] | None]] | None,
) -> RunRequest:
    return RunRequest(
        program=program,
        project_dir=options.project,
        skills=skill_source(options.skills_dir, environ),
        sink=sink,
        environ=environ,
        binding=options.binding,
        gateway=options.gateway,
        ask=ask,
        run_id=run_id,
        max_parallel=options.max_parallel,
        no_sandbox=options.no_sandbox,
        no_verify=options.no_verify,
        verify_full=options.verify_full,
        budget=options.budget,
        resume_from=options.resume_from,
        preview=bool(options.preview),
    )
