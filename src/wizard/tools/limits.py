"""The limits every command the agent runs is held to, on both engines and in verification.

- **memory**: what a command's processes may use together, the pages they write to a tmpfs
  included, `WIZARD_COMMAND_MEMORY` MiB (default 4096): a memory cgroup where wizard may make
  one (past it, the kernel kills the largest process: exit 137), and the data each process
  may allocate (`ulimit -d`) everywhere;
- **file size**: the largest file a command may write (`ulimit -f`), `WIZARD_COMMAND_FILE_SIZE`
  MiB (default 1024); past it the kernel stops the command (SIGXFSZ);
- **disk**: the run's commands together may grow the disks they write by
  `WIZARD_COMMAND_WRITE` MiB (default 8192; `tools.disk`), where they are in a cgroup;
- **time**: a command that names no timeout gets `WIZARD_COMMAND_TIMEOUT` seconds (default
  300), and none may ask for more than `MAX_TIMEOUT_S`; past it, the command and everything it
  started are stopped;
- **output**: wizard keeps the last `OUTPUT_BYTES` of what a command prints while it runs, not
  the whole of it (pi keeps its own bounded tail and spills the rest to a file).

The memory and file-size limits are set, as the process cap is, in the prefix each sandboxed
command starts with. A command past one gets a note in its result that says which limit.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from wizard.errors import UsageError

MAX_TIMEOUT_S = 1800.0
OUTPUT_BYTES = 1 << 20
SIGXFSZ_EXIT = 128 + 25
SIGKILL_EXIT = 128 + 9  # what the kernel's OOM killer leaves in a memory cgroup
# What a program prints when an allocation failed under the memory limit.
_OUT_OF_MEMORY = ("MemoryError", "Cannot allocate memory", "heap out of memory", "bad_alloc")


@dataclass(frozen=True)
class CommandLimits:
    """What one command may use."""

    memory_mib: int = 4096
    file_mib: int = 1024
    timeout_s: float = 300.0
    # What the run's commands may fill the disk with, together (`tools.disk`).
    write_mib: int = 8192

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> CommandLimits:
        """The limits the environment sets (`WIZARD_COMMAND_*`); a `UsageError` naming a bad
        value."""
        return cls(
            memory_mib=int(_setting(environ, "WIZARD_COMMAND_MEMORY", cls.memory_mib)),
            file_mib=int(_setting(environ, "WIZARD_COMMAND_FILE_SIZE", cls.file_mib)),
            write_mib=int(_setting(environ, "WIZARD_COMMAND_WRITE", cls.write_mib)),
            timeout_s=min(
                _setting(environ, "WIZARD_COMMAND_TIMEOUT", cls.timeout_s), MAX_TIMEOUT_S
            ),
        )

    def prefix(self) -> str:
        """The shell words that set the memory and file-size limits (bash counts both in
        KiB)."""
        return f"ulimit -d {self.memory_mib * 1024} -f {self.file_mib * 1024} && "

    def timeout(self, asked: object) -> float:
        """The time a call gets: what it asked for (a number > 0), else the default, never
        more than `MAX_TIMEOUT_S`."""
        if isinstance(asked, int | float) and not isinstance(asked, bool) and asked > 0:
            return min(float(asked), MAX_TIMEOUT_S)
        return self.timeout_s

    def notes(self) -> list[dict[str, object]]:
        """How to tell that a command was stopped by a limit, and what to tell the model: an
        exit code, or a line it printed (for pi's host, which adds the note itself)."""
        size = f"it wrote a file past the {self.file_mib} MiB a command may write"
        memory = f"it ran out of the {self.memory_mib} MiB of memory a command may use"
        stopped = f"(The command was stopped: {size}.)"
        failed = f"(The command failed: {memory}.)"
        rules: list[dict[str, object]] = [
            {"exit": SIGXFSZ_EXIT, "note": stopped},
            {"text": "File too large", "note": stopped},  # a program that ignores SIGXFSZ
        ]
        killed = f"(The command was killed: it may have used more than the {self.memory_mib} MiB "
        killed += "of memory a command's processes may use together, or the run's commands "
        killed += f"more than the {self.write_mib} MiB of disk they may write.)"
        rules += [{"text": text, "note": failed} for text in _OUT_OF_MEMORY]
        return [*rules, {"exit": SIGKILL_EXIT, "note": killed}]

    def note(self, code: int | None, output: str) -> str:
        """The note for a command that ended `code` having printed `output`, if a limit
        stopped it."""
        if code in (None, 0):
            return ""
        tail = output[-4096:]
        for rule in self.notes():
            if rule.get("exit") == code or (rule.get("text") and str(rule["text"]) in tail):
                return str(rule["note"])
        return ""


def _setting(environ: Mapping[str, str], name: str, default: float) -> float:
    value = environ.get(name, "").strip()
    if not value:
        return default
    try:
        number = float(value)
    except ValueError:
        number = 0
    if number <= 0:
        raise UsageError(f"{name}={value!r} is not a number > 0.", f"Set {name} to a number > 0.")
    return number
