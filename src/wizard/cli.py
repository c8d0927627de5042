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
from wizard.errors import EngineChanged, UsageError, WizardError
from wizard.outcome import EXIT_USAGE, Outcome, exit_code

if TYPE_CHECKING:
    from types import ModuleType

    from wizard.launch import LaunchOptions, Services
    from wizard.programs.types import ProgramConfig

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

# Switchboard options name their variables in the help text rather than with `envvar=`, so
# the switchboard still tells a flag from the environment (flag > env > config > program).
Project = Annotated[Path, typer.Option("--project", help="The project to set up.")]
HarnessOpt = Annotated[
    str | None,
    typer.Option("--harness", help="Agent harness: pi or anthropic.  [env var: WIZARD_HARNESS]"),
]
SequenceOpt = Annotated[
    str | None,
    typer.Option(
        "--sequence", help="Sequence: linear or orchestrator.  [env var: WIZARD_SEQUENCE]"
    ),
]


def _at_least_one(value: int | None) -> int | None:
    if value is not None and value < 1:
        raise typer.BadParameter(f"must be 1 or more, not {value}")
    return value


MaxParallel = Annotated[
    int | None,
    typer.Option(
        "--max-parallel",
        callback=_at_least_one,
        help="Orchestrator: task runs at once (default 3).  [env var: WIZARD_MAX_PARALLEL_TASKS]",
    ),
]
ModelOpt = Annotated[
    str | None,
    typer.Option("--model", help="Model id at the gateway.  [env var: WIZARD_MODEL]"),
]
SkillsDir = Annotated[
    Path | None,
    typer.Option(
        "--skills-dir", help="Read skills from this folder first.  [env var: WIZARD_SKILLS_DIR]"
    ),
]
Ci = Annotated[bool, typer.Option("--ci", help="No animation or questions; JSON Lines out.")]
OutcomeJson = Annotated[
    Path | None, typer.Option("--outcome-json", help="Write the outcome as JSON to this file.")
]
GatewayUrl = Annotated[
    str | None,
    typer.Option("--gateway-url", envvar="WIZARD_GATEWAY_URL", help="The gateway's root URL."),
]
GatewayKey = Annotated[
    str | None,
    typer.Option("--gateway-key", envvar="WIZARD_GATEWAY_KEY", help="The gateway's API key."),
]
GatewayApi = Annotated[
    str | None,
    typer.Option(
        "--gateway-api",
        envvar="WIZARD_GATEWAY_API",
        help="anthropic-messages (default) or openai-completions.",
    ),
]
AllowInsecure = Annotated[
    bool,
    typer.Option(
        "--allow-insecure-gateway",
        envvar="WIZARD_ALLOW_INSECURE_GATEWAY",
        help="Allow a plain-http gateway on another machine (the key crosses in clear).",
    ),
]
Verbose = Annotated[bool, typer.Option("--verbose", help="Show every tool call.")]
MaxTurns = Annotated[
    int | None,
    typer.Option("--max-turns", callback=_at_least_one,
                 help="End the run at its model request after N.  [env var: WIZARD_MAX_TURNS]"),
]  # fmt: skip
MaxCost = Annotated[
    float | None,
    typer.Option("--max-cost", help="End the run once it has cost this many USD (needs the "
                 "model's price).  [env var: WIZARD_MAX_COST]"),
]  # fmt: skip
MaxTime = Annotated[
    str | None,
    typer.Option("--max-time", help="End the run after this long, e.g. 10m or 1h.  "
                 "[env var: WIZARD_MAX_TIME]"),
]  # fmt: skip
NoVerify = Annotated[
    bool,
    typer.Option(
        "--no-verify",
        help="Skip the checks after the agent's work (the outcome warns that it did).",
    ),
]


def _verify_level(value: str) -> str:
    if value not in ("basic", "full"):
        raise typer.BadParameter(f"must be basic or full, not {value}")
    return value


Verify = Annotated[
    str,
    typer.Option(
        "--verify",
        callback=_verify_level,
        help="basic: check what the run changed; full: also the project's own build and "
        "tests (npm run build, npm test, pytest).",
    ),
]
NoSandbox = Annotated[
    bool,
    typer.Option(
        "--no-sandbox",
        help="Run the agent's commands without the OS sandbox (the fence alone; unsafe).  "
        "[env var: WIZARD_SANDBOX=off]",
    ),
]


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


def _usage_error(
    error: WizardError, program: str = "", ci: bool = False, outcome_json: Path | None = None
) -> typer.Exit:
    """Report a refused run (stderr, and the outcome for machines); exit code 2."""
    from wizard.launch import report_usage_error, usage_outcome

    report_usage_error(usage_outcome(program, error), ci, outcome_json)
    return typer.Exit(EXIT_USAGE)


def _launch(
    program: ProgramConfig,
    options: LaunchOptions,
    outcome_json: Path | None,
    services: Services | None = None,
    after: Callable[[Outcome], None] | None = None,
) -> None:
    from wizard.config import with_config
    from wizard.launch import launch

    try:
        outcome = launch(program, options, with_config(os.environ), services, after)
    except WizardError as exc:
        raise _usage_error(exc, program.id, options.ci, outcome_json) from exc
    if outcome_json is not None:
        outcome_json.write_text(outcome.to_json() + "\n")
    raise typer.Exit(exit_code(outcome))


def _options(
    project: Path,
    harness: str | None,
    sequence: str | None,
    model: str | None,
    skills_dir: Path | None,
    ci: bool,
    gateway: tuple[str | None, str | None, str | None, bool],
    verbose: bool,
    max_parallel: int | None,
    no_sandbox: bool = False,
    no_verify: bool = False,
    budget: tuple[int | None, float | None, str | None] = (None, None, None),
    verify: str = "basic",
) -> LaunchOptions:
    from wizard.launch import LaunchOptions
    from wizard.programs.types import ProgramBinding
    from wizard.runner.gateway import GatewayFlags
    from wizard.runner.harness.usage import BudgetFlags

    return LaunchOptions(
        project=project,
        binding=ProgramBinding(sequence=sequence, harness=harness, model=model),
        gateway=GatewayFlags(*gateway),
        skills_dir=skills_dir,
        ci=ci,
        verbose=verbose,
        max_parallel=max_parallel,
        no_sandbox=no_sandbox,
        no_verify=no_verify,
        budget=BudgetFlags(*budget),
        verify_full=verify == "full",
    )


@app.command()
def run(
    program: Annotated[
        str, typer.Argument(metavar="PROGRAM", help="The program to run (see `wizard programs`).")
    ],
    project: Project = Path("."),
    harness: HarnessOpt = None,
    sequence: SequenceOpt = None,
    model: ModelOpt = None,
    skills_dir: SkillsDir = None,
    ci: Ci = False,
    outcome_json: OutcomeJson = None,
    gateway_url: GatewayUrl = None,
    gateway_key: GatewayKey = None,
    gateway_api: GatewayApi = None,
    allow_insecure_gateway: AllowInsecure = False,
    verbose: Verbose = False,
    max_parallel: MaxParallel = None,
    no_sandbox: NoSandbox = False,
    no_verify: NoVerify = False,
    verify: Verify = "basic",
    max_turns: MaxTurns = None,
    max_cost: MaxCost = None,
    max_time: MaxTime = None,
) -> None:
    """Run a program on a project."""
    from wizard.programs import get_program

    try:
        config = get_program(program)
    except WizardError as exc:
        raise _usage_error(exc, program, ci, outcome_json) from exc
    gateway = (gateway_url, gateway_key, gateway_api, allow_insecure_gateway)
    options = _options(
        project,
        harness,
        sequence,
        model,
        skills_dir,
        ci,
        gateway,
        verbose,
        max_parallel,
        no_sandbox,
        no_verify,
        (max_turns, max_cost, max_time),
        verify,
    )
    _launch(config, options, outcome_json)


@app.command()
def skill(
    name: Annotated[str, typer.Argument(metavar="SKILL", help="The skill to run.")],
    project: Project = Path("."),
    harness: HarnessOpt = None,
    sequence: SequenceOpt = None,
    model: ModelOpt = None,
    skills_dir: SkillsDir = None,
    ci: Ci = False,
    outcome_json: OutcomeJson = None,
    gateway_url: GatewayUrl = None,
    gateway_key: GatewayKey = None,
    gateway_api: GatewayApi = None,
    allow_insecure_gateway: AllowInsecure = False,
    verbose: Verbose = False,
    max_parallel: MaxParallel = None,
    no_sandbox: NoSandbox = False,
    no_verify: NoVerify = False,
    verify: Verify = "basic",
    max_turns: MaxTurns = None,
    max_cost: MaxCost = None,
    max_time: MaxTime = None,
) -> None:
    """Run one skill on a project (no program-specific abort screens)."""
    from wizard.programs import skill_program

    gateway = (gateway_url, gateway_key, gateway_api, allow_insecure_gateway)
    options = _options(
        project,
        harness,
        sequence,
        model,
        skills_dir,
        ci,
        gateway,
        verbose,
        max_parallel,
        no_sandbox,
        no_verify,
        (max_turns, max_cost, max_time),
        verify,
    )
    _launch(skill_program(name), options, outcome_json)


@app.command(short_help="Run the offline demo (no API key).")
def demo(
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
    from wizard.programs import get_program

    prune_demo_journals()  # earlier demos' journals, whose projects are gone or many
    workdir = Path(tempfile.mkdtemp(prefix="wizard-demo-"))
    try:
        setup = prepare_demo(scenario, workdir)
    except WizardError as exc:
        shutil.rmtree(workdir, ignore_errors=True)
        raise _usage_error(exc, "demo", ci, outcome_json) from exc
    sandboxed = demo_sandbox_available()
    print_demo_intro(setup, ci, sandboxed)
    options = _options(
        setup.project,
        "pi",
        "linear",
        DEMO_MODEL,
        None,
        ci,
        (None, None, None, False),
        verbose,
        None,
        no_sandbox=not sandboxed,
    )
    _launch(
        get_program(DEMO_PROGRAM),
        options,
        outcome_json,
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


JournalProject = Annotated[Path, typer.Option("--project", help="The project whose runs to use.")]
RunArg = Annotated[
    str | None, typer.Argument(help="The run id, or a prefix of it (default: the latest run).")
]


@app.command()
def runs(
    project: JournalProject = Path("."),
    as_json: Annotated[bool, typer.Option("--json", help="One JSON array of the runs.")] = False,
) -> None:
    """List the journaled runs of a project, newest first."""
    import json

    from wizard.journal import Journal
    from wizard.ui.console import make_console
    from wizard.ui.tables import runs_table

    records = Journal(project).records()
    if as_json:
        typer.echo(
            json.dumps(
                [r.model_dump(exclude={"before_modes", "after_modes"}) for r in records], indent=1
            )
        )
        return
    if not records:
        typer.echo(f"No journaled runs of {project.resolve()} yet: `wizard run` records each one.")
        return
    make_console().print(runs_table(records, str(project.resolve())))


@app.command(short_help="Show a run's changes as a patch.")
def diff(
    run: RunArg = None,
    project: JournalProject = Path("."),
    stat: Annotated[bool, typer.Option("--stat", help="A summary: files and line counts.")] = False,
) -> None:
    """Show what a run changed, as a patch `git apply` takes (default: the latest run)."""
    import sys

    from wizard.journal import Journal
    from wizard.ui.diff import colour_patch

    journal = Journal(project)
    try:
        record = journal.find(run, undoable=False)
    except WizardError as exc:
        raise _usage_error(exc) from exc
    patch = journal.patch(record, stat=stat)
    if not patch:
        typer.echo(f"Run {record.run_id} changed no files.", err=True)
        return
    coloured = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    out = sys.stdout.buffer
    out.write((colour_patch(patch) if coloured else patch).encode(errors="surrogateescape"))
    out.flush()


@app.command(short_help="Undo a run's changes.")
def undo(
    run: RunArg = None,
    project: JournalProject = Path("."),
    force: Annotated[
        bool, typer.Option("--force", help="Undo even files that changed after the run.")
    ] = False,
) -> None:
    """Put back every file a run changed (default: the latest run not undone yet)."""
    from wizard.journal import Journal, UndoRefused
    from wizard.journal.lock import project_lock
    from wizard.launch import new_run_id

    journal = Journal(project)
    undo_id = new_run_id()
    try:
        with project_lock(project, undo_id):  # not while a run works on the project
            target = journal.find(run)
            done = journal.undo(target, undo_id, force=force)
    except UndoRefused as exc:
        typer.echo(f"error: {exc.message}", err=True)
        typer.echo(exc.hint or "", err=True)
        raise typer.Exit(1) from exc
    except WizardError as exc:
        raise _usage_error(exc) from exc
    for line in done.restored:
        typer.echo(f"  {line}")
    typer.echo(
        f"Undid run {target.run_id} ({len(done.restored)} change(s)); this undo is run "
        f"{done.record.run_id}, and `wizard undo {done.record.run_id}` takes it back."
    )


@app.command(short_help="Carry on an interrupted orchestrator run.")
def resume(
    run: RunArg = None,
    project: JournalProject = Path("."),
    ci: Ci = False,
    outcome_json: OutcomeJson = None,
    gateway_url: GatewayUrl = None,
    gateway_key: GatewayKey = None,
    gateway_api: GatewayApi = None,
    allow_insecure_gateway: AllowInsecure = False,
    verbose: Verbose = False,
    max_parallel: MaxParallel = None,
    no_sandbox: NoSandbox = False,
    no_verify: NoVerify = False,
    verify: Verify = "basic",
    max_turns: MaxTurns = None,
    max_cost: MaxCost = None,
    max_time: MaxTime = None,
) -> None:
    """Carry on an interrupted orchestrator run: finished tasks do not run again."""
    from dataclasses import replace

    from wizard.programs import get_program
    from wizard.runner.resume import resumable_run

    try:
        record = resumable_run(project, run)
        config = get_program(record.program)  # a `wizard skill` run is not resumable
    except WizardError as exc:
        raise _usage_error(exc, run or "resume", ci, outcome_json) from exc
    gateway = (gateway_url, gateway_key, gateway_api, allow_insecure_gateway)
    options = _options(project, record.harness, "orchestrator", None, None, ci, gateway,
                       verbose, max_parallel, no_sandbox, no_verify,
                       (max_turns, max_cost, max_time), verify)  # fmt: skip
    _launch(config, replace(options, resume_from=record.run_id), outcome_json)


@app.command(short_help="Print the JSON Schema of the outcome or the --ci events.")
def schema(
    what: Annotated[str, typer.Argument(metavar="outcome|events", help="outcome or events.")],
) -> None:
    """Print the JSON Schema of what wizard writes for machines: the outcome
    (`--outcome-json`) or one `--ci` line. Fields are only added within a major version."""
    import json

    from wizard.schemas import events_schema, outcome_schema

    schemas = {"outcome": outcome_schema, "events": events_schema}
    if what not in schemas:
        raise _usage_error(UsageError(f"Unknown schema '{what}'.", "Ask for outcome or events."))
    typer.echo(json.dumps(schemas[what](), indent=2))


@app.command(short_help="Check what a run needs.")
def doctor() -> None:
    """Check Node, pi, the OS sandbox, the SDK and the gateway settings; exit 1 if one fails."""
    from wizard.config import with_config
    from wizard.doctor import run_checks
    from wizard.ui.console import make_console
    from wizard.ui.tables import print_doctor

    checks = run_checks(with_config(os.environ))
    print_doctor(make_console(), checks)
    if any(check.ok is False for check in checks):
        raise typer.Exit(1)


@engines_app.command("install")
def engines_install(
    engine: Annotated[str, typer.Argument(help="The engine to install: pi.")] = "pi",
) -> None:
    """Install an agent engine (pi: npm @mariozechner/pi-coding-agent, exactly pinned)."""
    from wizard.engines import bundle as pi_engine

    if engine != "pi":
        typer.echo(f"error: unknown engine {engine!r}; the installable engine is 'pi'.", err=True)
        raise typer.Exit(EXIT_USAGE)
    try:
        installed = pi_engine.installed_pi()
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


def _indented(line: str) -> None:
    typer.echo(f"  {line}")


@engines_app.command("status")
def engines_status() -> None:
    """Say which engines are installed, and where."""
    from wizard.engines import bundle as pi_engine

    try:
        node = str(pi_engine.find_node())
    except WizardError as exc:
        node = f"missing ({exc.message})"
    typer.echo(f"node: {node}")
    prefix = pi_engine.pi_prefix()
    if not pi_engine.pi_files_installed():
        typer.echo(f"pi: not installed (expected {pi_engine.PI_VERSION} in {prefix})")
        typer.echo("    install it with: wizard engines install pi")
    elif node.startswith("missing"):
        typer.echo(f"pi: {pi_engine.PI_VERSION} in {prefix}, but it cannot run without Node.js")
    else:
        typer.echo(f"pi: {pi_engine.PI_VERSION} in {prefix}")


def main() -> None:
    """Console-script entry point, and the only exit. A usage error Click finds before any
    command runs (an unknown option, a bad value) is reported as wizard's own are: in its
    words on stderr, and as the `usage_error` outcome with `--ci` / `--outcome-json`."""
    import sys

    click = _click_exceptions()
    try:
        code = app(standalone_mode=False, prog_name="wizard")
    except click.UsageError as exc:
        raise SystemExit(_click_usage_error(exc, sys.argv[1:])) from None
    except click.ClickException as exc:
        exc.show()
        raise SystemExit(exc.exit_code) from None
    except (click.Abort, KeyboardInterrupt) as exc:
        if isinstance(exc, KeyboardInterrupt) or isinstance(exc.__cause__, KeyboardInterrupt):
            raise SystemExit(_cancelled_early(sys.argv[1:])) from None
        typer.echo("Aborted.", err=True)
        raise SystemExit(1) from None
    raise SystemExit(code if isinstance(code, int) else 0)


def _cancelled_early(argv: list[str]) -> int:
    """Ctrl-C before a run's own handling began: the cancelled screen; exit 130."""
    from wizard.launch import report_cancelled_early

    outcome = report_cancelled_early(_program_of(argv), "--ci" in argv, _outcome_json_of(argv))
    return exit_code(outcome)


def _click_exceptions() -> ModuleType:
    """Click's exceptions module, wherever Typer takes Click from (newer Typers vendor it)."""
    import sys

    return sys.modules[typer.BadParameter.__module__]


def _click_usage_error(exc: Exception, argv: list[str]) -> int:
    """Report Click's usage error like wizard's own; its exit code (2)."""
    from wizard.errors import UsageError
    from wizard.launch import report_usage_error, usage_outcome

    click = _click_exceptions()
    ctx = getattr(exc, "ctx", None)
    command = ctx.command_path if ctx is not None else "wizard"
    if isinstance(exc, click.NoSuchOption):
        message = f"Unknown option {exc.option_name}."
        if exc.possibilities:
            message += f" Did you mean {' or '.join(sorted(exc.possibilities))}?"
    elif isinstance(exc, click.MissingParameter) and exc.param is not None:
        message = f"Missing {exc.param.metavar or str(exc.param.name).upper()}."
    elif isinstance(exc, click.BadParameter) and exc.param is not None:
        name = exc.param.opts[0] if exc.param.opts else exc.param.name
        message = f"{name}: {exc.message}"
    else:
        text = str(getattr(exc, "message", exc))
        message = text[:1].upper() + text[1:]
    outcome = usage_outcome(_program_of(argv), UsageError(message, f"See `{command} --help`."))
    report_usage_error(outcome, "--ci" in argv, _outcome_json_of(argv))
    return EXIT_USAGE


def _program_of(argv: list[str]) -> str:
    """The program a refused command line named (`run NAME` / `skill NAME`, the demo)."""
    if argv[:1] == ["demo"]:
        return "demo"
    if len(argv) > 1 and argv[0] in ("run", "skill") and not argv[1].startswith("-"):
        return argv[1]
    return ""


def _outcome_json_of(argv: list[str]) -> Path | None:
    """Where `--outcome-json` asked the outcome to go, read from the raw command line."""
    for index, arg in enumerate(argv):
        if arg == "--outcome-json" and index + 1 < len(argv):
            return Path(argv[index + 1])
        if arg.startswith("--outcome-json="):
            return Path(arg.split("=", 1)[1])
    return None
