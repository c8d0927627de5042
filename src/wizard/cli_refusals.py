"""A command line refused before any command ran (Click found a bad option) or interrupted
before a run began (Ctrl-C): reported as wizard reports its own refusals, in its words on
stderr and, with `--ci` / `--outcome-json`, as the outcome. `wizard.cli.main` calls these
and exits with the code they return."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import typer

from wizard.errors import WizardError
from wizard.interrupts import is_ctrl_c
from wizard.outcome import EXIT_CANCELLED, EXIT_USAGE, exit_code


def usage_exit(
    error: WizardError, program: str = "", ci: bool = False, outcome_json: Path | None = None
) -> typer.Exit:
    """Report a refused command (stderr, and the outcome for machines); exit code 2."""
    from wizard.launch import report_usage_error, usage_outcome

    report_usage_error(usage_outcome(program, error), ci, outcome_json)
    return typer.Exit(EXIT_USAGE)


def refused(error: WizardError, argv: list[str]) -> int:
    """Report an error of wizard's that no command reported (a config file that cannot be
    read, say) as a refused command: in its words, with its hint; exit code 2."""
    from wizard.launch import report_usage_error, usage_outcome

    report_usage_error(
        usage_outcome(program_of(argv), error), "--ci" in argv, outcome_json_of(argv)
    )
    return EXIT_USAGE


CANCELLED_PLAINLY = "\nwizard: cancelled while starting; nothing ran.\n"


def cancelled_early(argv: list[str]) -> int:
    """Ctrl-C before a run's own handling began: the cancelled screen; exit 130. Said plainly
    when the screen cannot be shown: the interrupt may have left a module it needs half
    imported (asyncio, pydantic), or the user pressed Ctrl-C again."""
    try:
        from wizard.launch import report_cancelled_early

        outcome = report_cancelled_early(program_of(argv), "--ci" in argv, outcome_json_of(argv))
    except BaseException:  # whatever it was, the user asked to stop
        sys.stderr.write(CANCELLED_PLAINLY)
        return EXIT_CANCELLED
    return exit_code(outcome)


# Whether a command of wizard's began: before one does, a bare 130 from Typer (which turns a
# KeyboardInterrupt into it) is a Ctrl-C that nothing reported yet.
_began: list[bool] = []


def interrupted_before_a_command(code: object) -> bool:
    """Whether Typer's answer `code` is a Ctrl-C that came before any command began."""
    return code == EXIT_CANCELLED and not _began


def cancellable(*apps: typer.Typer, report: Callable[[list[str]], int] = cancelled_early) -> None:
    """Make Ctrl-C inside any command of `apps` its `report` (by default the cancelled
    screen; exit 130). A newer Typer turns a KeyboardInterrupt in a command into a bare exit
    130 of its own: no screen, no outcome. A Ctrl-C an extension turned into its own error
    (`wizard.interrupts`) counts as one. A command whose run began has its own handling,
    and returns its own ending, which is then the only one shown."""
    for app in apps:
        for info in app.registered_commands:
            if info.callback is not None:
                info.callback = _cancelled_on_interrupt(info.callback, report)


def _cancelled_on_interrupt(
    command: Callable[..., Any], report: Callable[[list[str]], int]
) -> Callable[..., Any]:
    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        _began.append(True)
        try:
            return command(*args, **kwargs)
        except BaseException as exc:
            if not is_ctrl_c(exc):
                raise
            raise typer.Exit(report(sys.argv[1:])) from None

    return run


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
        message = f"{name}: {_in_our_words(exc)}"
    else:
        text = str(getattr(exc, "message", exc))
        message = text[:1].upper() + text[1:]
    outcome = usage_outcome(program_of(argv), UsageError(message, f"See `{command} --help`."))
    report_usage_error(outcome, "--ci" in argv, outcome_json_of(argv))
    return EXIT_USAGE


def _in_our_words(exc: Exception) -> str:
    """A bad value's problem: Typer converts values with pydantic, whose own text (its error
    types, its links) is not wizard's."""
    from pydantic import ValidationError

    from wizard.config import in_our_words

    if isinstance(exc.__cause__, ValidationError):
        said = in_our_words(exc.__cause__)
        return said[:1].upper() + said[1:] + "."
    message = str(getattr(exc, "message", exc))  # an older Typer: Click's own conversion
    for clicks, ours in ((" is not a valid integer", " is not a whole number"),
                         (" is not a valid float", " is not a number")):  # fmt: skip
        message = message.replace(clicks, ours)
    return message


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
