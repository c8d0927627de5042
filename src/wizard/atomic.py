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
from collections.abc import Iterable
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


class DurableBatch:
    """Many new files, each whole, made durable together: what `add` gets goes to a temp file
    beside its target at once; leaving the block syncs the file system once (Linux's
    `syncfs`; elsewhere each file), renames every file into place and syncs again. A kill
    at any moment leaves each target absent or whole, never short. An error in the block
    removes the temp files instead."""

    def __init__(self, anchor: Path) -> None:
        self.anchor = anchor  # a folder on the file system the files are written to
        self._staged: dict[Path, Path] = {}  # target → its temp file

    def __enter__(self) -> DurableBatch:
        return self

    def holds(self, path: Path) -> bool:
        """Whether `path` is one of the batch's files already."""
        return path in self._staged

    def add(self, path: Path, data: bytes, mode: int) -> None:
        temp = _temp_beside(path)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        with os.fdopen(os.open(temp, flags, mode), "wb") as handle:
            self._staged[path] = temp
            handle.write(data)

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        staged, self._staged = self._staged, {}
        if kind is not None:
            for temp in staged.values():
                with contextlib.suppress(OSError):
                    temp.unlink()
            return
        if not staged:
            return
        if not _sync_file_system(self.anchor):
            for temp in staged.values():
                with open(temp, "rb") as handle:
                    os.fsync(handle.fileno())
        for path, temp in staged.items():
            os.rename(temp, path)
        if not _sync_file_system(self.anchor):
            for folder in {path.parent for path in staged}:
                _sync_folder(folder)


def make_durable(anchor: Path, paths: Iterable[Path]) -> None:
    """Flush new files (`paths`, already in place) and their folders' entries to disk: the
    whole file system `anchor` is on in one call (Linux's `syncfs`), elsewhere file by file."""
    if _sync_file_system(anchor):
        return
    paths = list(paths)
    for path in paths:
        with open(path, "rb") as handle:
            os.fsync(handle.fileno())
    for folder in {path.parent for path in paths}:
        _sync_folder(folder)


def _sync_file_system(anchor: Path) -> bool:
    """Flush everything written to `anchor`'s file system (Linux's `syncfs`); False where
    that call is missing or fails, and the caller syncs file by file."""
    import ctypes

    try:
        syncfs = ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError):
        return False
    descriptor = os.open(anchor, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return bool(syncfs(descriptor) == 0)
    finally:
        os.close(descriptor)


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
