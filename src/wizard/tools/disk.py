"""The write cap of a run's commands: how much the disks they write may fill.

A command may write no file larger than `WIZARD_COMMAND_FILE_SIZE` (`ulimit -f`), but many
files of that size would fill the disk. So while a run goes, a guard watches the file systems
its commands may write (the project's and the run's temp folder's): once what is used on them
has grown by more than `WIZARD_COMMAND_WRITE` MiB since the run began, every process in the
run's cgroups is killed, and so is any later command as soon as it writes more. Its result
says so, and the run's log names the cap.

The growth is the file systems' own (`statvfs`), so another program writing to the same disk
meanwhile counts too: the cap is set well above what a setup writes (8 GiB by default; a
dependency install is hundreds of MB). Without a cgroup to find the commands by (an ordinary
user without a delegated cgroup v2), nothing is capped but each file's size, and the run's
log says so.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

# How often the guard looks: a command writing 1 GB/s gets a quarter of a GB past the cap.
PERIOD_S = 0.25


def used_bytes(paths: Iterable[Path]) -> int:
    """What is used on the file systems that hold `paths`, each counted once."""
    seen: dict[int, int] = {}
    for path in paths:
        with contextlib.suppress(OSError):
            device = os.stat(path).st_dev
            if device not in seen:
                info = os.statvfs(path)
                seen[device] = (info.f_blocks - info.f_bfree) * info.f_frsize
    return sum(seen.values())


class DiskGuard:
    """Kills the processes in `groups` (cgroup folders) whenever the file systems of `paths`
    have grown by more than `cap_bytes` since the guard started; `told(message)` once, the
    first time."""

    def __init__(
        self,
        paths: Iterable[Path],
        groups: Iterable[Path],
        cap_bytes: int,
        told: Callable[[str], None] = lambda message: None,
    ) -> None:
        self.paths, self.groups, self.cap = tuple(paths), tuple(groups), cap_bytes
        self.told = told
        self.start = used_bytes(self.paths)
        self.stopped = 0  # processes killed
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="wizard-disk-guard", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._done.set()
        self._thread.join()

    def _watch(self) -> None:
        while not self._done.wait(PERIOD_S):
            self.check()

    def check(self) -> None:
        """Look once: past the cap, kill what runs in the run's cgroups."""
        grown = used_bytes(self.paths) - self.start
        if grown <= self.cap:
            return
        killed = [pid for group in self.groups for pid in _procs(group) if _kill(pid)]
        if killed and not self.stopped:
            self.told(
                f"A command was stopped: the run's commands wrote {grown >> 20} MiB, past the "
                f"{self.cap >> 20} MiB they may write (WIZARD_COMMAND_WRITE)."
            )
        self.stopped += len(killed)


def _procs(group: Path) -> list[int]:
    try:
        return [int(line) for line in (group / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def _kill(pid: int) -> bool:
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        return False
    return True
