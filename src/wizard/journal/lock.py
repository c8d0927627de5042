"""One run per project: a lock in wizard's state folder, keyed by the project's real path.

Two runs on one project at once both edit its files and both journal them, and undoing the
earlier one is then refused for "edits" the user never made. So a run (and `wizard undo`)
holds the project's lock for as long as it works: an advisory `flock` on a file that names
the run and its process. The kernel drops the lock when that process ends however it ends,
so a lock left by a killed run is simply taken over, with a line that says so.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from wizard.errors import UsageError
from wizard.layout import state_root


class ProjectLocked(UsageError):
    """Another run of wizard is working on the project."""

    def __init__(self, project: Path, holder: dict[str, Any]) -> None:
        run, pid = holder.get("run_id", "?"), holder.get("pid", "?")
        super().__init__(
            f"Another wizard run ({run}, pid {pid}) is working on {project}.",
            f"Wait for it to end, or stop it (`kill {pid}`), then run again. Nothing was changed.",
        )
        self.holder = holder


def lock_path(project: Path, root: Path | None = None) -> Path:
    """The lock file of `project` (its real path) in wizard's state folder."""
    key = hashlib.sha256(str(project.resolve()).encode()).hexdigest()[:16]
    return (root or state_root()) / "locks" / f"{key}.lock"


@contextlib.contextmanager
def project_lock(
    project: Path,
    run_id: str,
    *,
    root: Path | None = None,
    note: Callable[[str], None] = lambda line: None,
) -> Iterator[None]:
    """Hold `project`'s lock for run `run_id`; `ProjectLocked` if another run holds it."""
    path = lock_path(project, root)
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ProjectLocked(project.resolve(), _holder(descriptor)) from None
        if (stale := _holder(descriptor)).get("pid"):
            note(
                f"took over the lock of run {stale.get('run_id')} (pid {stale.get('pid')}), "
                "whose process is gone"
            )
        holder = {"run_id": run_id, "pid": os.getpid(), "project": str(project.resolve())}
        _rewrite(descriptor, json.dumps(holder).encode())
        try:
            yield
        finally:
            _rewrite(descriptor, b"")
    finally:
        os.close(descriptor)  # closing drops the lock


def is_locked(project: Path, root: Path | None = None) -> bool:
    """Whether a run (another process, or this one) holds `project`'s lock now."""
    return lock_holder(project, root) is not None


def lock_holder(project: Path, root: Path | None = None) -> dict[str, Any] | None:
    """Who holds `project`'s lock now (its run id and pid), or None when no run does."""
    try:
        descriptor = os.open(lock_path(project, root), os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _holder(descriptor)
        return None
    finally:
        os.close(descriptor)


def _holder(descriptor: int) -> dict[str, Any]:
    os.lseek(descriptor, 0, os.SEEK_SET)
    try:
        loaded = json.loads(os.read(descriptor, 4096) or b"{}")
    except ValueError:
        return {}
    return loaded if isinstance(loaded, dict) else {}


def _rewrite(descriptor: int, data: bytes) -> None:
    os.ftruncate(descriptor, 0)
    os.pwrite(descriptor, data, 0)
