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
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextlib import AbstractAsyncContextManager, ExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Literal, cast

from wizard.ahead import Timeline
from wizard.analytics import analytics_from_env
from wizard.code_names import runs_code
from wizard.errors import UsageError, WizardError
from wizard.events import EventBus, EventSink, LogLine
from wizard.journal import Journal
from wizard.names import shown
from wizard.outcome import AgentErrorType, Outcome, Outro, Tally
from wizard.processes import become_subreaper, stop_descendants
from wizard.programs.types import ProgramConfig
from wizard.runlog import RunLog
from wizard.runner import run_program
from wizard.runner.plan import RunFlags, plan_run, preview_wanted
from wizard.tools.paths import is_env_name
from wizard.ui.ci import CiOutput
from wizard.ui.console import make_console
from wizard.ui.live import LiveView
from wizard.ui.outro import print_outro

Services = Callable[[], AbstractAsyncContextManager[Mapping[str, str]]]


@dataclass(frozen=True)
class Screen:
    """How a run is shown, and what it leaves for machines (the run itself is `RunFlags`)."""

    ci: bool = False
    verbose: bool = False
    outcome_json: Path | None = None
    # `--patch-out`: a preview's change, written as a patch.
    patch_out: Path | None = None


def new_run_id() -> str:
    """A fresh id for one run: names its log file and tags its events and outcome."""
    return uuid.uuid4().hex[:12]


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
    if any(PurePosixPath(repo).name != ".git" for repo in record.repos_added):
        warnings = (*warnings, BARE_REPOSITORIES)  # one git finds by its shape
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
    counts = Counter(str(task.get("status")) for task in outcome.tasks)
    stood = ", ".join(f"{count} {status}" for status, count in counts.items())
    command = f"wizard resume {run_id} --project {project}"
    body = f"{outcome.outro.body}\n\nSteps: {stood}. Carry it on with `{command}`: the steps "
    body += "that finished are not run again."
    return replace(outcome, outro=replace(outcome.outro, body=body))


# What a run that made a repository recommends: git then uses a repository only where it is
# named (`--git-dir`, `GIT_DIR`) or a `.git`, never a folder it found by its shape.
BARE_REPOSITORIES = (
    "Set `git config --global safe.bareRepository explicit`: a folder that holds a HEAD, "
    "objects/ and refs/ is a repository to git, whatever its name, and a git command run "
    "there runs its configuration."
)


def wrote_code(paths: list[str], run_id: str) -> str:
    """The warning for files the run wrote that run code as the user (`code_names`)."""
    named = ", ".join(shown(path) for path in paths[:5])
    more = f" and {len(paths) - 5} more" if len(paths) > 5 else ""
    return (
        f"The run wrote files that run code as you when you commit, install, open the project "
        f"in an editor or enter its folder: {named}{more}. Review them (`wizard diff "
        f"{run_id}`) before you do; `wizard undo {run_id}` takes them back."
    )


def check_patch_out(flags: RunFlags, screen: Screen, environ: Mapping[str, str]) -> None:
    """`--patch-out` writes a preview's change: a run that is no preview has none."""
    if screen.patch_out is not None and not preview_wanted(flags.preview, environ):
        raise UsageError(
            "--patch-out writes a preview's change, and this run is not a preview.",
            "Add --preview (the project is then left untouched), or leave out --patch-out.",
        )


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


def cancelled_outcome(tally: Tally, program: ProgramConfig, by: int = signal.SIGINT) -> Outcome:
    """The outcome of a run the user (or a signal `by`) interrupted: what it did so far."""
    outro = Outro(
        "cancel",
        f"{program.label} cancelled",
        "The run was interrupted and nothing more will run. Files the agent already changed "
        "stay as they are.",
    )
    return tally.outcome("cancelled", program.id, outro=outro, signal=by)


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
    flags: RunFlags,
    screen: Screen,
    environ: Mapping[str, str],
    services: Services | None = None,
    after_run: Callable[[Outcome], None] | None = None,
    ahead: Timeline | None = None,
) -> Outcome:
    """Run `program` as `flags` ask, shown as `screen` says (the live view or `--ci`), and
    return its outcome.

    `services` may run things for the length of the run inside its event loop (the demo's
    gateway) and give extra environment; `after_run` prints anything after the outro;
    `ahead` is what `__main__` started with the process for the run (`wizard.ahead`). The
    outcome goes to `screen.outcome_json` before anything is printed: a closed terminal (the
    user's window, a killed tmux session) must not cost the machines their answer.
    """
    ahead = ahead or Timeline()
    check_patch_out(flags, screen, environ)
    run_id = new_run_id()
    console = make_console(sys.stderr if screen.ci else sys.stdout)
    ci = CiOutput(sys.stdout, run_id) if screen.ci else None
    live = LiveView(console, verbose=screen.verbose) if ci is None else None
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

        tally = Tally()  # what the run did so far; what it runs on, as asked until it begins
        tally.add(run_id=run_id, harness=flags.binding.harness, sequence=flags.binding.sequence)

        async def run(extra: Mapping[str, str]) -> Outcome:
            plan = plan_run(program, flags, {**environ, **extra})
            return await run_program(plan, bus, ask=ask, run_id=run_id, tally=tally,
                                     ahead=ahead)  # fmt: skip

        outcome = _run_to_the_end(program, run, services, tally)
        # What no run took (a run that never began): ended before the sweep below, which
        # would count it as left by the run.
        ahead.close()
        if orphans := stop_descendants():  # whatever the agent started that outlived pi
            bus(LogLine(f"stopped {len(orphans)} process(es) left by the run", "warning"))
    if outcome.status == "cancelled":
        outcome = resumable(outcome, run_id, flags.project)
    outcome = with_journal(replace(outcome, run_id=run_id), flags.project)
    if screen.patch_out is not None and outcome.preview:
        outcome = with_patch(outcome, flags.project, screen.patch_out)
    if outcome.error_type is AgentErrorType.ENGINE_FAILURE and outcome.outro is not None:
        body = f"{outcome.outro.body}\n\nLog file: {log.path}"
        outcome = replace(outcome, outro=replace(outcome.outro, body=body))
    if screen.outcome_json is not None:
        screen.outcome_json.write_text(outcome.to_json() + "\n")
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
    run: Callable[[Mapping[str, str]], Awaitable[Outcome]],
    services: Services | None,
    tally: Tally,
) -> Outcome:
    """Run in an event loop; Ctrl-C, SIGTERM and SIGHUP end it with a clean teardown, and
    its outcome made from what the run did so far (`tally`)."""
    become_subreaper()
    caught: list[int] = []
    try:
        return asyncio.run(_run(run, services, caught))
    except (KeyboardInterrupt, asyncio.CancelledError):
        by = caught[0] if caught else signal.SIGINT
        return cancelled_outcome(tally, program, by)


async def _run(
    run: Callable[[Mapping[str, str]], Awaitable[Outcome]],
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
        return await run(extra)


@asynccontextmanager
async def _no_services() -> AsyncIterator[Mapping[str, str]]:
    yield {}
