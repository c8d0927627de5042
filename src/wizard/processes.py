"""The processes a run starts, and making sure none outlives wizard.

pi runs each command the agent starts in a session of its own, so a pi that is killed leaves
them running, reparented to init. On Linux wizard makes itself a *child subreaper*
(`prctl(PR_SET_CHILD_SUBREAPER)`): orphans of pi come back to wizard instead, and when the
run ends every process still below wizard is stopped (`stop_descendants`). On other systems
a clean teardown still stops pi and the command it runs, but a command started by a pi that
was killed from outside can outlive wizard.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
from pathlib import Path

_PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Adopt the orphans of this process's descendants (Linux); whether it worked."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def descendants(root: int) -> list[int]:
    """Every live descendant of `root`, read from /proc (Linux; empty elsewhere)."""
    children: dict[int, list[int]] = {}
    proc = Path("/proc")
    for entry in proc.iterdir() if proc.is_dir() else []:
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    found, stack = [], [root]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def is_stopped(pid: int | None) -> bool:
    """Whether process `pid` is stopped (SIGSTOP, or a debugger), read from /proc."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (OSError, TypeError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] in ("T", "t")


def stop_descendants() -> list[int]:
    """Kill every process below this one and reap it; the pids that were stopped."""
    stopped = descendants(os.getpid())
    for pid in stopped:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    return stopped
