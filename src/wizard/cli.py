"""The `wizard` command line. The only module that exits the process.

Exit codes: 0 succeeded, 1 failed, 2 usage or configuration error, 3 aborted (a skill's
`[ABORT]` or the gateway's refusal), 130 interrupted. Heavy modules are imported inside the
commands, so `wizard --help` stays fast and works with no engine installed.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from wizard import __version__
from wizard.cli_fleet import fleet_app
from wizard.cli_journal import COMMANDS
from wizard.cli_options import (
    AllowInsecure,
    Ci,
    GatewayApi,
    GatewayKey,
    GatewayUrl,
    JournalProject,
    OutcomeJson,
    RunArg,
    Verbose,
    run_options,
)
from wizard.cli_refusals import cancellable, usage_exit
from wizard.errors import EngineChanged, UsageError, WizardError
from wizard.outcome import EXIT_USAGE, Outcome, exit_code
from wizard.runner.harness.registry import HARNESSES, HarnessEntry

if TYPE_CHECKING:
    from wizard.ahead import Timeline
    from wizard.launch import Screen, Services
    from wizard.programs.types import ProgramConfig
    from wizard.runner.plan import RunFlags

_CONTEXT = {"help_option_names": ["-h", "--help"]}
app = typer.Typer(
    name="wizard",
    help="Run LLM coding agents through setup programs and report truly how each run ended.",
    context_settings=_CONTEXT,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)
engines_app = typer.Typer(
    help="Install and inspect agent engines.", no_args_is_help=True, context_settings=_CONTEXT
)
app.add_typer(engines_app, name="engines")
app.add_typer(fleet_app, name="fleet")

# Switchboard options name their variables in the help text rather than with `envvar=`, so
# the switchboard still tells a flag from the environment (flag > env > config > program).


def _version(value: bool) -> None:
    if value:
        typer.echo(f"wizard {__version__}")
        raise typer.Exit()


@app.callback(invoke_without_command=True)
def _root(
    ctx: typer.Context,
    version: Annotated[
        bool,
        typer.Option(
            "--version", "-V", callback=_version, is_eager=True, help="Print the version."
        ),
    ] = False,
) -> None:
    """Run LLM coding agents through setup programs."""
    if ctx.invoked_subcommand is None:
        typer.echo(ctx.get_help())
        raise typer.Exit()


def _launch(
    ctx: typer.Context,
    program: ProgramConfig,
    flags: RunFlags,
    screen: Screen,
    services: Services | None = None,
    after: Callable[[Outcome], None] | None = None,
) -> None:
    """Launch the run, handing it what `__main__` started for it with the process (the
    timeline `main` was given, in the context's `obj`)."""
    from wizard.ahead import Timeline
    from wizard.config import with_config
    from wizard.launch import launch

    root = ctx.find_root().obj
    ahead = root if isinstance(root, Timeline) else None
    try:
        outcome = launch(program, flags, screen, with_config(os.environ), services, after, ahead)
    except WizardError as exc:
        raise usage_exit(exc, program.id, screen.ci, screen.outcome_json) from exc
    raise typer.Exit(exit_code(outcome))


@app.command()
@run_options()
def run(
    ctx: typer.Context,
    program: Annotated[
        str, typer.Argument(metavar="PROGRAM", help="The program to run (see `wizard programs`).")
    ],
    flags: RunFlags,
    screen: Screen,
) -> None:
    """Run a program on a project."""
    from wizard.programs import get_program

    try:
        config = get_program(program)
    except WizardError as exc:
        raise usage_exit(exc, program, screen.ci, screen.outcome_json) from exc
    _launch(ctx, config, flags, screen)


@app.command()
@run_options()
def skill(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(metavar="SKILL", help="The skill to run.")],
    flags: RunFlags,
    screen: Screen,
) -> None:
    """Run one skill on a project (no program-specific abort screens)."""
    from wizard.programs import skill_program

    _launch(ctx, skill_program(name), flags, screen)


@app.command(short_help="Run the offline demo (no API key).")
def demo(
    ctx: typer.Context,
    scenario: Annotated[
        str,
        typer.Option(help="success, skill-abort, gateway-refusal or broken-build."),
    ] = "success",
    ci: Ci = False,
    outcome_json: OutcomeJson = None,
    verbose: Verbose = False,
) -> None:
    """Run the offline demo: a real pi run on a sample project, with a scripted model.

    The sample project is kept afterwards (its path is printed), so the agent's changes and
    the report it wrote can be read.
    """
    import shutil
    import tempfile

    from wizard.demo.run import (
        demo_sandbox_available,
        demo_services,
        print_demo_intro,
        show_changes,
    )
    from wizard.demo.sample import DEMO_MODEL, DEMO_PROGRAM, prepare_demo
    from wizard.journal import prune_demo_journals
    from wizard.launch import Screen
    from wizard.programs import get_program
    from wizard.runner.plan import RunFlags

    prune_demo_journals()  # earlier demos' journals, whose projects are gone
    workdir = Path(tempfile.mkdtemp(prefix="wizard-demo-"))
    try:
        setup = prepare_demo(scenario, workdir)
    except WizardError as exc:
        shutil.rmtree(workdir, ignore_errors=True)
        raise usage_exit(exc, "demo", ci, outcome_json) from exc
    sandboxed = demo_sandbox_available()
    print_demo_intro(setup, ci, sandboxed)
    flags = RunFlags(project=setup.project, harness="pi", sequence="linear", model=DEMO_MODEL,
                     no_sandbox=not sandboxed)  # fmt: skip
    _launch(
        ctx,
        get_program(DEMO_PROGRAM),
        flags,
        Screen(ci=ci, verbose=verbose, outcome_json=outcome_json),
        services=lambda: demo_services(setup),
        after=lambda outcome: show_changes(setup, outcome, ci),
    )


@app.command()
def programs() -> None:
    """List the programs and the bundled skills."""
    from wizard.programs import PROGRAMS
    from wizard.skills.sources import BundledSkills
    from wizard.ui.console import make_console
    from wizard.ui.tables import programs_table

    ordered = sorted(PROGRAMS.values(), key=lambda program: program.id)
    make_console().print(programs_table(ordered, BundledSkills().menu()))


for _name, (_command, _summary) in COMMANDS.items():
    app.command(_name, short_help=_summary)(_command)


@app.command(short_help="Carry on an interrupted orchestrator run.")
@run_options(omit=frozenset({"harness", "sequence", "model", "skills_dir", "preview", "patch_out"}))
def resume(
    ctx: typer.Context,
    run: RunArg = None,
    project: JournalProject = Path("."),
    *,
    flags: RunFlags,
    screen: Screen,
) -> None:
    """Carry on an interrupted orchestrator run: finished tasks do not run again."""
    from dataclasses import replace

    from wizard.programs import get_program
    from wizard.runner.resume import resumable_run

    try:
        record = resumable_run(project, run)
        config = get_program(record.program)  # a `wizard skill` run is not resumable
    except WizardError as exc:
        raise usage_exit(exc, run or "resume", screen.ci, screen.outcome_json) from exc
    flags = replace(flags, project=project, harness=record.harness, sequence="orchestrator",
                    resume_from=record.run_id)  # fmt: skip
    _launch(ctx, config, flags, screen)


@app.command(short_help="Print the JSON Schema of the outcome or the --ci events.")
def schema(
    what: Annotated[
        str, typer.Argument(metavar="outcome|events|fleet", help="outcome, events or fleet.")
    ],
) -> None:
    """Print the JSON Schema of what wizard writes for machines: the outcome
    (`--outcome-json`), one `--ci` line, or a fleet's burndown (`wizard fleet status --json`).
    Fields are only added within a major version."""
    import json

    from wizard.schemas import events_schema, fleet_schema, outcome_schema

    schemas = {"outcome": outcome_schema, "events": events_schema, "fleet": fleet_schema}
    if what not in schemas:
        hint = "Ask for outcome, events or fleet."
        raise usage_exit(UsageError(f"Unknown schema '{what}'.", hint))
    typer.echo(json.dumps(schemas[what](), indent=2))


@app.command(short_help="Check what a run needs.")
def doctor(
    gateway_url: GatewayUrl = None,
    gateway_key: GatewayKey = None,
    gateway_api: GatewayApi = None,
    allow_insecure_gateway: AllowInsecure = False,
) -> None:
    """Check Node, pi, the OS sandbox, the SDK and the gateway (reached as a run reaches it,
    its key asked about where that costs nothing); exit 1 if one fails."""
    from wizard.config import with_config
    from wizard.doctor import Check, run_checks
    from wizard.errors import ConfigError
    from wizard.runner.gateway import GatewayFlags
    from wizard.ui.console import make_console
    from wizard.ui.tables import print_doctor

    try:
        environ, broken = with_config(os.environ), []
    except ConfigError as exc:  # a finding like any other; the rest is checked without it
        environ, broken = (
            dict(os.environ),
            [Check("config file", False, exc.message, exc.hint or "")],
        )
    flags = GatewayFlags(gateway_url, gateway_key, gateway_api, allow_insecure_gateway)
    checks = [*broken, *run_checks(environ, flags)]
    print_doctor(make_console(), checks)
    if any(check.ok is False for check in checks):
        raise typer.Exit(1)


@engines_app.command("install")
def engines_install(
    engine: Annotated[str, typer.Argument(help=f"The engine to install: {_installable()}.")] = "pi",
) -> None:
    """Install an agent engine (pi: npm @earendil-works/pi-coding-agent, exactly pinned)."""
    from wizard.engines import bundle as pi_engine

    entry = HARNESSES.get(engine)
    if entry is None:
        typer.echo(f"error: unknown engine {engine!r}; wizard installs {_installable()}.",
                   err=True)  # fmt: skip
        raise typer.Exit(EXIT_USAGE)
    if not entry.wizard_installs:
        _python_engine(entry)
        return
    try:
        installed = pi_engine.installed_bundle()
        if installed is not None:
            pi_engine.find_node()
            try:
                pi_engine.check_unchanged(installed.prefix)
                typer.echo(f"pi {installed.version} is already installed in {installed.prefix}")
                return
            except EngineChanged as exc:  # the fix the refusal names: install it afresh
                typer.echo(f"  {exc.message} Reinstalling.")
        installed = pi_engine.install_pi(_indented, replace_changed=True)
    except WizardError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from exc
    typer.echo(f"pi {installed.version} installed in {installed.prefix}")


def _installable() -> str:
    return " or ".join(name for name, entry in HARNESSES.items() if entry.wizard_installs)


def _python_engine(entry: HarnessEntry) -> None:
    """A harness whose engine comes with a Python package: say whether it is installed, or
    its install command (exit 1)."""
    try:
        entry.make()
    except WizardError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from exc
    typer.echo(f"The {entry.name} engine comes with its Python package, which is installed.")


def _indented(line: str) -> None:
    typer.echo(f"  {line}")


@engines_app.command("status")
def engines_status() -> None:
    """Say which engines are installed, and where."""
    from wizard.engines import bundle as pi_engine

    try:
        found = pi_engine.node_runtime()
        node = f"{found.path} ({found.version}, {found.why})"
    except WizardError as exc:
        node = f"missing ({exc.message})"
    typer.echo(f"node: {node}")
    prefix = pi_engine.pi_prefix()
    if not pi_engine.pi_files_installed():
        typer.echo(f"pi: not installed (expected {pi_engine.PI_VERSION} in {prefix})")
        typer.echo("    install it with: wizard engines install pi")
        return
    try:  # what a run checks before it starts the engine
        pi_engine.check_unchanged(prefix)
    except WizardError as exc:
        typer.echo(f"pi: {pi_engine.PI_VERSION} in {prefix}, not run: {exc.message}")
        typer.echo(f"    {exc.hint}")
        raise typer.Exit(1) from exc
    if node.startswith("missing"):
        typer.echo(f"pi: {pi_engine.PI_VERSION} in {prefix}, but it cannot run without Node.js")
    else:
        typer.echo(f"pi: {pi_engine.PI_VERSION} in {prefix}")


cancellable(app, engines_app)


def main(ahead: Timeline | None = None) -> None:
    """Console-script entry point, and the only exit. A usage error Click finds before any
    command runs (an unknown option, a bad value) is reported as wizard's own are: in its
    words on stderr, and as the `usage_error` outcome with `--ci` / `--outcome-json`.
    `ahead`: what `__main__` started with the process, handed to the run the command
    launches (as the context's `obj`)."""
    import sys

    from wizard.cli_refusals import (
        cancelled_early,
        click_exceptions,
        click_usage_error,
        interrupted_before_a_command,
        refused,
    )
    from wizard.errors import WizardError
    from wizard.interrupts import is_ctrl_c

    click = click_exceptions()
    try:
        code = app(standalone_mode=False, prog_name="wizard", obj=ahead)
    except click.UsageError as exc:
        raise SystemExit(click_usage_error(exc, sys.argv[1:])) from None
    except click.ClickException as exc:
        exc.show()
        raise SystemExit(exc.exit_code) from None
    except WizardError as exc:  # one a command did not report itself: in wizard's words
        raise SystemExit(refused(exc, sys.argv[1:])) from None
    except (typer.Abort, KeyboardInterrupt) as exc:  # Typer's own: newer ones vendor Click
        if is_ctrl_c(exc):
            raise SystemExit(cancelled_early(sys.argv[1:])) from None
        typer.echo("Aborted.", err=True)
        raise SystemExit(1) from None
    if interrupted_before_a_command(code):  # Typer's bare 130: say so, as for any Ctrl-C
        raise SystemExit(cancelled_early(sys.argv[1:]))
    _quiet_if_gone()
    raise SystemExit(code if isinstance(code, int) else 0)


def _quiet_if_gone() -> None:
    """A closed terminal is not an error of the run: output that can no longer be flushed
    goes nowhere, so Python's own flush at exit neither complains nor changes the exit code."""
    import sys

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except OSError:
            os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())
