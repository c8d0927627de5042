"""What a command line says before the CLI has parsed it: enough for `__main__` to start
what a run will need (pi's host, the journal's listings) while the rest of wizard loads.

A guess, never the word on what runs: the CLI parses the command line as ever, and what was
started for a run that does not come is ended. Standard library only.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

# The commands that run an agent on a harness the switchboard picks.
AGENT_COMMANDS = frozenset({"run", "skill", "demo"})
_NOT_A_RUN = frozenset({"-h", "--help", "-V", "--version", "--show-completion",
                        "--install-completion"})  # fmt: skip


def run_words(argv: Sequence[str], commands: frozenset[str]) -> list[str] | None:
    """The words of a command line (what is not an option, the command first) if it runs one
    of `commands`; None for any other, and for a call for help."""
    words = [word for word in argv if not word.startswith("-")]
    if not words or words[0] not in commands or _NOT_A_RUN.intersection(argv):
        return None
    return words


def option_value(argv: Sequence[str], name: str) -> str | None:
    """The value the command line gives option `name` (`--name value` or `--name=value`;
    the last one given), or None."""
    value = None
    for number, word in enumerate(argv):
        if word == name and number + 1 < len(argv):
            value = argv[number + 1]
        elif word.startswith(f"{name}="):
            value = word.split("=", 1)[1]
    return value


def project_named(argv: Sequence[str]) -> Path:
    """The project the command line names: its `--project`, else the working folder (as
    given, not resolved)."""
    return Path(option_value(argv, "--project") or ".")
