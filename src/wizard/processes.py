"""The processes a run starts, and making sure none outlives wizard.

pi runs each command the agent starts in a session of its own, so a pi that is killed leaves
them running, reparented to init. On Linux wizard makes itself a *child subreaper*
(`prctl(PR_SET_CHILD_SUBREAPER)`): orphans of pi come back to wizard instead, and when the
run ends every process still below wizard is stopped (`stop_descendants`). On other systems
a clean teardown still stops pi and the command it runs, but a command started by a pi that
was killed from outside can outlive wizard. The process tree is read through psutil, so what
is left below a process is found on macOS as on Linux.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
from collections.abc import Sequence

import psutil

_PR_SET_DUMPABLE = 4
_PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Adopt the orphans of this process's descendants (Linux); whether it worked."""
    return _prctl(_PR_SET_CHILD_SUBREAPER, 1)


def close_own_process() -> bool:
    """Make this process's memory and environment (the gateway key, where it came from the
    environment) unreadable to the user's other processes: not dumpable, its `/proc` files
    are root's (Linux; exec resets it in the processes it starts). For a run without the
    sandbox, whose commands run as the user in wizard's own PID namespace: root's commands
    can still read them. Whether it worked."""
    return _prctl(_PR_SET_DUMPABLE, 0)


def _prctl(option: int, value: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(option, value, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def descendants(root: int) -> list[int]:
    """Every live descendant of `root` (any system psutil knows; empty if `root` is gone).
    A zombie (a process that has ended, not yet reaped) is not live."""
    try:
        children = psutil.Process(root).children(recursive=True)
    except psutil.Error:
        return []
    return [child.pid for child in children if _running(child)]


def _running(process: psutil.Process) -> bool:
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def is_running(pid: int) -> bool:
    """Whether process `pid` lives (a zombie, ended but not reaped, does not)."""
    try:
        return _running(psutil.Process(pid))
    except psutil.Error:
        return False


def is_stopped(pid: int | None) -> bool:
    """Whether process `pid` is stopped (SIGSTOP, or a debugger)."""
    if pid is None:
        return False
    try:
        return psutil.Process(pid).status() in (psutil.STATUS_STOPPED, psutil.STATUS_TRACING_STOP)
    except psutil.Error:
        return False


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


# Run in a child by a Python of its own, with no site and no environment (`with_parent_death`):
# the parent-death signal set, the parent checked to be the one that started it (not one that
# died first), then the command, which keeps the signal across exec.
_DIE_WITH_PARENT = (
    "import ctypes,os,signal,sys;ctypes.CDLL(None).prctl(1,signal.SIGTERM);"
    "os.getppid()==int(sys.argv[1]) or os._exit(143);os.execvp(sys.argv[2],sys.argv[2:])"
)


def with_parent_death(command: Sequence[str]) -> list[str]:
    """`command`, so started that it gets SIGTERM when this process dies (Linux's parent-death
    signal; elsewhere it is `command` as it is). The signal is set by a small Python (about
    15 ms) that then execs the command, never by Python code between fork and exec in this
    process (`preexec_fn`, `die_with_parent`): in a process with threads, such as a fleet
    worker (Temporal's, and its steps'), that can deadlock the child before its exec, and
    the parent with it, which waits for the exec to succeed."""
    if sys.platform != "linux":
        return list(command)
    return [sys.executable, "-I", "-S", "-c", _DIE_WITH_PARENT, str(os.getpid()), *command]


def die_with_parent() -> None:
    """In a child, before it runs its program: SIGTERM when its parent dies (Linux's
    parent-death signal; elsewhere nothing). Only where no other thread runs: as a
    `preexec_fn` it runs between fork and exec (`with_parent_death` otherwise)."""
    if sys.platform == "linux":
        ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
