"""`python -m wizard` and the `wizard` console script.

Ctrl-C can come while wizard is still loading its own modules, before `wizard.cli.main` can
catch anything: that ends like any other early Ctrl-C, with the cancelled screen (and the
outcome for machines) and exit 130, never a traceback; if an interrupted import leaves that
screen's own modules broken, a plain line says so instead. A Ctrl-C that an extension
turned into its own error (`wizard.interrupts`) is a Ctrl-C all the same.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from wizard.interrupts import is_ctrl_c

if TYPE_CHECKING:
    from wizard.ahead import Timeline


def run() -> None:
    """Load the CLI, then run it; the only way in. A run of pi gets its engine started while
    the rest loads (`runner.harness.pi.early`), and a run's journal its project's dependency
    folders listed (`listings`): both on one timeline (`wizard.ahead`), which the CLI hands
    to the run."""
    try:
        ahead = _start_early()
        from wizard.cli import main
    except BaseException as exc:
        if not is_ctrl_c(exc):
            raise
        raise SystemExit(_cancelled_while_loading()) from None
    try:
        main(ahead)
    except SystemExit as done:
        _exit_now(done.code)


# What a run imports before it needs its engine (typer's own parsing too), loaded behind a
# pi host started early.
_RUN_MODULES = ("wizard.cli", "typer._adapters", "wizard.launch", "wizard.runner.run",
                "wizard.runner.harness.pi.harness")  # fmt: skip


def _start_early() -> Timeline:
    """What a run will need, started before the rest loads, on the run's timeline: wizard's
    programs pinned (`pinned`), pi's host if it runs pi as the switchboard decides (its
    engine checked first: the host's load is such a run's longest wait), then the listing of
    the project's dependency folders. What nothing takes is discarded at exit at the latest."""
    import atexit
    import os

    from wizard.ahead import Timeline
    from wizard.argv import AGENT_COMMANDS, run_words
    from wizard.pinned import pin_tools
    from wizard.runner.harness.pi.early import EARLY_HOST, load_behind_host, prestart

    argv = sys.argv[1:]
    pin_tools(argv, os.environ)  # before anything starts: every process inherits it
    ahead = Timeline()
    atexit.register(ahead.close)  # first: what it starts goes whenever wizard does
    if run_words(argv, AGENT_COMMANDS) is not None:
        prestart(lambda: _runs_pi(argv), ahead)
    from wizard.listings import start_ahead  # after the host's start, which waits for nothing

    listing = start_ahead(argv, ahead)
    ours = () if listing is None else (listing,)
    load_behind_host(_RUN_MODULES, ahead.peek(EARLY_HOST), ours=ours)
    return ahead


def _runs_pi(argv: list[str]) -> bool:
    """Whether the command runs pi, as the switchboard decides (and the run's plan will)."""
    import os

    from wizard.runner.switchboard import command_harness

    return command_harness(argv, os.environ) == "pi"


def _exit_now(code: object) -> None:
    """Exit as Python would, without tearing down every module and object first (a fifth of
    a second here, after the outcome is known): other threads are waited for and the exit
    handlers run as at a normal exit (the same private calls the interpreter makes), then the
    streams are flushed and the process ends."""
    import atexit
    import contextlib
    import os
    import threading

    if code is not None and not isinstance(code, int):
        sys.stderr.write(f"{code}\n")
        code = 1
    threading._shutdown()  # type: ignore[attr-defined]  # what the interpreter does first
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed terminal: said already
            stream.flush()
    os._exit(code or 0)


def _cancelled_while_loading() -> int:
    """The cancelled screen (`cli_refusals.cancelled_early`), or a plain line if even that
    module cannot be loaded now."""
    try:
        from wizard.cli_refusals import cancelled_early
    except BaseException:  # whatever happened, the user pressed Ctrl-C
        sys.stderr.write("\nwizard: cancelled while starting; nothing ran.\n")
        return 130
    return cancelled_early(sys.argv[1:])


if __name__ == "__main__":
    run()
