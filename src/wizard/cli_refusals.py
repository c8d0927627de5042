"""A command line refused before any command ran (Click found a bad option) or interrupted
before a run began (Ctrl-C): reported as wizard reports its own refusals, in its words on
stderr and, with `--ci` / `--outcome-json`, as the outcome. `wizard.cli.main` calls these
and exits with the code they return."""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

import typer

from wizard.errors import WizardError
from wizard.outcome import EXIT_USAGE, exit_code


def usage_exit(
    error: WizardError, program: str = "", ci: bool = False, outcome_json: Path | None = None
) -> typer.Exit:
    """Report a refused command (stderr, and the outcome for machines); exit code 2."""
    from wizard.launch import report_usage_error, usage_outcome

    report_usage_error(usage_outcome(program, error), ci, outcome_json)
    return typer.Exit(EXIT_USAGE)


def cancelled_early(argv: list[str]) -> int:
    """Ctrl-C before a run's own handling began: the cancelled screen; exit 130."""
    from wizard.launch import report_cancelled_early

    outcome = report_cancelled_early(program_of(argv), "--ci" in argv, outcome_json_of(argv))
    return exit_code(outcome)


def click_exceptions() -> ModuleType:
    """Click's exceptions module, wherever Typer takes Click from (newer Typers vendor it)."""
    return sys.modules[typer.BadParameter.__module__]


def click_usage_error(exc: Exception, argv: list[str]) -> int:
    """Report Click's usage error like wizard's own; its exit code (2)."""
    from wizard.errors import UsageError
    from wizard.launch import report_usage_error, usage_outcome

    click = click_exceptions()
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
    outcome = usage_outcome(program_of(argv), UsageError(message, f"See `{command} --help`."))
    report_usage_error(outcome, "--ci" in argv, outcome_json_of(argv))
    return EXIT_USAGE


def program_of(argv: list[str]) -> str:
    """The program a refused command line named (`run NAME` / `skill NAME`, the demo)."""
    if argv[:1] == ["demo"]:
        return "demo"
    if len(argv) > 1 and argv[0] in ("run", "skill") and not argv[1].startswith("-"):
        return argv[1]
    return ""


def outcome_json_of(argv: list[str]) -> Path | None:
    """Where `--outcome-json` asked the outcome to go, read from the raw command line."""
    for index, arg in enumerate(argv):
        if arg == "--outcome-json" and index + 1 < len(argv):
            return Path(argv[index + 1])
        if arg.startswith("--outcome-json="):
            return Path(arg.split("=", 1)[1])
    return None
