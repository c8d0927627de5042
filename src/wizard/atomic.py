"""Writing the user's files so that a kill at any moment leaves each one whole, old or new.

Every write wizard makes in a project (the agent's file tools, undo, `set_env_values`, skill
installs) goes through here: the new content goes to a temp file in the same folder, is
flushed to disk, and is renamed over the target, which POSIX makes atomic.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
from pathlib import Path


def _temp_beside(path: Path) -> Path:
    return path.with_name(f".{path.name}.wizard-{secrets.token_hex(6)}.tmp")


def _sync_folder(folder: Path) -> None:
    with contextlib.suppress(OSError):
        descriptor = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)


def write_atomically(path: Path, data: bytes, mode: int | None = None) -> None:
    """Replace `path` with `data`; `mode` defaults to the old file's (else 0o644)."""
    if mode is None:
        try:
            mode = path.stat().st_mode & 0o7777
        except FileNotFoundError:
            mode = 0o644
    folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        write_in(folder, path.name, data, mode)
    finally:
        os.close(folder)


def write_in(folder: int, name: str, data: bytes, mode: int) -> None:
    """Replace `name` in the open `folder` with `data`: a temp file beside it, flushed to disk,
    renamed over it. What is at `name` (a link, a pipe) is replaced, never written through."""
    temp = f".{name[:80]}.wizard-{secrets.token_hex(6)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    descriptor = os.open(temp, flags, 0o600, dir_fd=folder)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        os.rename(temp, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=folder)
        raise
    with contextlib.suppress(OSError):
        os.fsync(folder)


def symlink_atomically(path: Path, target: str) -> None:
    """Make `path` a symlink to `target`, replacing whatever is there."""
    temp = _temp_beside(path)
    os.symlink(target, temp)
    _move_into_place(temp, path)


def _move_into_place(temp: Path, path: Path) -> None:
    try:
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    _sync_folder(path.parent)


def replace_folder(staged: Path, target: Path) -> None:
    """Move the folder `staged` to `target` (same file system), replacing an old `target`."""
    old = target.with_name(f".{target.name}.wizard-old-{secrets.token_hex(6)}")
    had_old = target.exists()
    if had_old:
        os.replace(target, old)
    os.replace(staged, target)
    _sync_folder(target.parent)
    if had_old:
        shutil.rmtree(old, ignore_errors=True)
