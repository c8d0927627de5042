"""The OS sandbox's part in a run: its requirements, its policy, and what it leaves to clean.

With the sandbox on (the default), a run that cannot have it stops before the agent starts,
with the exact install command (exit 2). `--no-sandbox` / `WIZARD_SANDBOX=off` runs with the
fence alone, after a loud warning that is also in the outcome.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from wizard.events import EventSink, LogLine
from wizard.layout import socket_temp_dir, state_root
from wizard.processes import close_own_process
from wizard.runlog import log_dir
from wizard.runner.previewing import Workspace
from wizard.tools.disk import DiskGuard
from wizard.tools.limits import CommandLimits
from wizard.tools.sandbox import (
    SandboxPolicy,
    build_policy,
    check_sandbox,
    private_caches,
    process_cap,
    remove_cgroup,
    sandbox_enabled,
)

NO_SANDBOX_WARNING = (
    "The OS sandbox is OFF for this run: commands the agent runs, and "
    "scripts it writes, can read every file you can (.env files and credentials included) and "
    "reach any host. Only the fence's checks of each command's text stand in the way."
)


@dataclass
class RunSandbox:
    """One run's sandbox: its policy (None when off), and the folders it made."""

    policy: SandboxPolicy | None
    temp_dir: Path | None = None
    cgroups: tuple[Path, ...] = ()
    disk: DiskGuard | None = None

    @property
    def warnings(self) -> tuple[str, ...]:
        """What the outcome must warn of."""
        return () if self.policy is not None else (NO_SANDBOX_WARNING,)

    @classmethod
    def open(
        cls,
        workspace: Workspace,
        run_id: str,
        hosts: tuple[str, ...],
        environ: Mapping[str, str],
        sink: EventSink,
        *,
        off: bool = False,
    ) -> RunSandbox:
        """Check the sandbox can run and build its policy; a `UsageError` naming the fix."""
        if not sandbox_enabled(environ, off):
            sink(LogLine(NO_SANDBOX_WARNING, "warning"))
            close_own_process()  # its commands share wizard's PID namespace: not its memory
            return cls(None)
        check_sandbox()
        temp_dir = Path(tempfile.mkdtemp(prefix=f"wizard-run-{run_id}-", dir=socket_temp_dir()))
        # Made now: one a command made on first use would throw its kept sandbox away.
        for cache in private_caches(temp_dir).values():
            cache.mkdir(parents=True)
        limits = CommandLimits.from_environ(environ)
        caps = process_cap(run_id, limits.memory_mib)
        if not caps.processes:
            sink(LogLine("the process count of commands is not capped here (root, no cgroup)"))
        if not caps.memory:
            sink(LogLine("the memory of commands is capped per process here (no cgroup)"))
        # A preview's commands see the copy, never the project, but for the folders the copy
        # shows read-only.
        project = (workspace.project,) if workspace.preview else ()
        policy = build_policy(
            workspace.root,
            temp_dir,
            hosts=hosts,
            environ=environ,
            private=(state_root(), log_dir(), *project),
            read_only=tuple(workspace.mounts.values()),
            cap_prefix=caps.prefix,
        )
        if not caps.groups:
            sink(LogLine("what commands write is capped per file here (no cgroup)"))
            return cls(policy, temp_dir)
        cap = limits.write_mib << 20
        disk = DiskGuard((workspace.root, temp_dir), caps.groups, cap, _told(sink))
        return cls(policy, temp_dir, caps.groups, disk)

    def close(self) -> None:
        """Stop the disk guard; remove the run's temp folder and cgroups."""
        if self.disk is not None:
            self.disk.close()
        if self.temp_dir is not None:
            shutil.rmtree(self.temp_dir, ignore_errors=True)
        for group in self.cgroups:
            remove_cgroup(group)


def _told(sink: EventSink) -> Callable[[str], None]:
    """A warning for the run's log and screen, from the disk guard's thread: handed to the
    run's event loop (the sink is the loop's), or given at once where there is none."""
    try:
        loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        loop = None

    def told(message: str) -> None:
        if loop is None:
            sink(LogLine(message, "warning"))
        else:
            with contextlib.suppress(RuntimeError):  # the loop has closed: the run is over
                loop.call_soon_threadsafe(sink, LogLine(message, "warning"))

    return told
