"""`python -m wizard` and the `wizard` console script.

Ctrl-C can come while wizard is still loading its own modules, before `wizard.cli.main` can
catch anything: that ends like any other early Ctrl-C, with the cancelled screen (and the
outcome for machines) and exit 130, never a traceback; if an interrupted import leaves that
screen's own modules broken, a plain line says so instead.
"""

import sys


def run() -> None:
    """Load the CLI, then run it; the only way in."""
    try:
        from wizard.cli import main
    except KeyboardInterrupt:
        raise SystemExit(_cancelled_while_loading()) from None
    main()


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
