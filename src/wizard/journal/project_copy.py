"""A preview's private copy of a project: where a `--preview` run works instead of the project.

The copy is made file by file, copy-on-write where the file system can (Linux's `FICLONE`,
what `cp --reflink=auto` does; macOS's `clonefile`), else byte for byte, with each file's
mode and times. Links are copied as links, and files that are one inode under two names in
the project are one inode in the copy too, so a hard link to a `.env` file is still known for
one there. Pipes, sockets and devices are left out, as the journal leaves them out.

Dependency and build folders (`listings.HEAVY_FOLDERS`) and `.git` are not copied: the
copy holds a link to the project's own folder in their place, a *mount*. The agent's file
tools read through a mount and refuse to write there (`ProjectRoot`); the OS sandbox lets
commands read the project's folder and nothing else of the project, and no command may write
it, so a command that would change it fails (`tools.paths.READ_ONLY_NOTE` says why).

Each copy lives beside its project's journal (`<journal>/previews/<run id>/project`) and goes
when the preview is applied or discarded, or once it is older than `WIZARD_PREVIEW_KEEP`
days (default 7) at the start of a later run.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import fcntl
import os
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

from wizard.listings import HEAVY_FOLDERS

# What a preview shows read-only through a link, not copied: `.git` is closed to the agent's
# file tools and to commands' writes anyway, and history can be big.
MOUNTED = HEAVY_FOLDERS | {".git"}
_FICLONE = 0x40049409  # linux/fs.h: _IOW(0x94, 9, int)
_CLONE_NOFOLLOW = 0x0001  # macOS sys/clonefile.h
_CHUNK = 1 << 20


@dataclass(frozen=True)
class ProjectCopy:
    """A copy made: its folder, its mounts (path in the copy → the project's folder shown
    there), and how many files were cloned copy-on-write or copied byte for byte."""

    root: Path
    mounts: dict[str, str]
    cloned: int = 0
    copied: int = 0


def copy_project(project: Path, dest: Path) -> ProjectCopy:
    """Copy `project` into the new folder `dest`, heavy folders mounted (see the module)."""
    project = project.resolve()
    dest.mkdir(mode=0o700, parents=True)
    copier = _Copier(project, dest)
    copier.copy_folder("")
    # Folders last, deepest first: a read-only folder takes its files before its mode.
    for relative, info in sorted(copier.folders, key=lambda f: f[0].count("/"), reverse=True):
        target = dest / relative if relative else dest
        os.chmod(target, stat.S_IMODE(info.st_mode))
        os.utime(target, ns=(info.st_atime_ns, info.st_mtime_ns))
    return ProjectCopy(dest, copier.mounts, copier.cloned, copier.copied)


class _Copier:
    """One walk of the project, copying as it goes; never follows a link."""

    def __init__(self, project: Path, dest: Path) -> None:
        self.project = project
        self.dest = dest
        self.mounts: dict[str, str] = {}
        self.folders: list[tuple[str, os.stat_result]] = []
        self.inodes: dict[tuple[int, int], Path] = {}
        self.cloned = 0
        self.copied = 0

    def copy_folder(self, relative: str) -> None:
        source = self.project / relative
        self.folders.append((relative, os.stat(source, follow_symlinks=False)))
        with os.scandir(source) as found:
            items = list(found)
        for item in items:
            path = f"{relative}/{item.name}" if relative else item.name
            target = self.dest / path
            info = item.stat(follow_symlinks=False)
            if stat.S_ISDIR(info.st_mode):
                if item.name in MOUNTED:
                    os.symlink(self.project / path, target)
                    self.mounts[path] = str(self.project / path)
                else:
                    target.mkdir(mode=0o700)
                    self.copy_folder(path)
            elif stat.S_ISLNK(info.st_mode):
                os.symlink(os.readlink(self.project / path), target)
                os.utime(target, ns=(info.st_atime_ns, info.st_mtime_ns), follow_symlinks=False)
            elif stat.S_ISREG(info.st_mode):
                self.copy_file(self.project / path, target, info)

    def copy_file(self, source: Path, target: Path, info: os.stat_result) -> None:
        key = (info.st_dev, info.st_ino)
        if info.st_nlink > 1 and key in self.inodes:
            os.link(self.inodes[key], target)
            return
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        reader = os.open(source, flags)
        try:
            if sys.platform == "darwin" and _clonefile(source, target):
                self.cloned += 1
            else:
                writer = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
                try:
                    if _clone(reader, writer):
                        self.cloned += 1
                    else:
                        _copy_bytes(reader, writer)
                        self.copied += 1
                finally:
                    os.close(writer)
        finally:
            os.close(reader)
        os.chmod(target, stat.S_IMODE(info.st_mode))
        os.utime(target, ns=(info.st_atime_ns, info.st_mtime_ns))
        if info.st_nlink > 1:
            self.inodes[key] = target


def _clone(reader: int, writer: int) -> bool:
    """Share the file's blocks (Btrfs, XFS, ...); False where the file system cannot."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        fcntl.ioctl(writer, _FICLONE, reader)
    except OSError as exc:
        if exc.errno in (errno.EOPNOTSUPP, errno.EXDEV, errno.EINVAL, errno.ENOTTY, errno.EPERM):
            return False
        raise
    return True


def _clonefile(source: Path, target: Path) -> bool:
    """macOS's `clonefile` (APFS); False where it cannot clone."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    done = libc.clonefile(os.fsencode(source), os.fsencode(target), _CLONE_NOFOLLOW)
    return bool(done == 0)


def _copy_bytes(reader: int, writer: int) -> None:
    """The file's bytes, in the kernel where it can (`copy_file_range`)."""
    with contextlib.suppress(OSError):
        while os.copy_file_range(reader, writer, _CHUNK):
            pass
        return
    os.lseek(reader, 0, os.SEEK_SET)
    os.lseek(writer, 0, os.SEEK_SET)
    os.ftruncate(writer, 0)
    while chunk := os.read(reader, _CHUNK):
        os.write(writer, chunk)
