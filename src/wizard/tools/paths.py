"""The one place a path the agent wrote becomes a file wizard opens.

A name is judged and opened in one walk, at the moment of use: the project root is held open
as a folder descriptor, and each component is opened relative to the folder before it with
`O_NOFOLLOW`, so the kernel never follows a link on wizard's behalf. A symlink met on the way
is read and its target walked the same way, from the folder that holds it; a target that
leaves the project is refused. The object at the end is checked through its own descriptor
(`fstat`): only regular files and folders, nothing under a `.git` folder at any depth, no
`.env*` file (the env tools have their own door), and no file that is the same inode as an
environment file under another name. What is opened is the very object that was checked;
no engine normalises the name first (wizard's file tools replace the engines' own).

A preview's copy holds *mounts*, links to the project's own heavy folders: a walk that meets
one opens the folder wizard named for it (never the link's target, which the agent may have
swapped) and refuses to write beneath it.

Refusals are values (`Refusal`), returned to the tool and from there to the model.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

from wizard.atomic import write_in
from wizard.code_names import refusal_text, runs_code

# Environment-file templates hold no secrets; every other `.env*` file is closed.
ENV_TEMPLATES = frozenset({".env.example", ".env.sample", ".env.template", ".env.dist"})
MAX_LINK_HOPS = 40
MAX_READ_BYTES = 20 << 20
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# Folders the agent's file tools never open, at any depth: git's own (their config and hooks
# run code whenever the user's git works in the project).
CLOSED_FOLDERS = frozenset({".git"})
# Folders an env-file search skips: never where a project keeps its `.env`.
_SKIP_FOR_ENV = frozenset({".git", "node_modules"})
# Why a preview's copy refuses to change a folder it shows read-only (the file tools say it,
# and a command that fails on one gets it as a note).
READ_ONLY_NOTE = (
    "This run is a preview on a copy of the project: its dependency and build folders "
    "(node_modules, virtualenvs, dist, build, ...) and .git are the project's own, shown "
    "read-only, so nothing may change them here. Change the manifests instead (package.json, "
    "requirements, pyproject.toml): the user installs once the preview is applied."
)


@dataclass(frozen=True)
class Refusal:
    """Why a path may not be used; goes back to the model as the tool's error.

    `kind` tells a plain refusal from a name that is simply missing or is a folder, which a
    check of a command's arguments lets pass.
    """

    reason: str
    kind: Literal["refused", "missing", "folder"] = "refused"


def is_env_name(name: str) -> bool:
    """Whether a file name is an environment file that holds secrets: `.env*` (`.envrc`
    included) or `*.env` (`docker.env`); templates do not."""
    return (name.startswith(".env") or name.endswith(".env")) and name not in ENV_TEMPLATES


@dataclass
class Located:
    """A path beneath the root: the open folder that holds it, its name there, and where it is.

    `folder` is a descriptor the caller owns (close it, or use `Located` as a context manager).
    """

    folder: int
    name: str
    relative: PurePosixPath

    def __enter__(self) -> Located:
        return self

    def __exit__(self, *exc: object) -> None:
        os.close(self.folder)

    def lstat(self) -> os.stat_result | None:
        """What the name is now, not followed; None when nothing is there."""
        try:
            return os.stat(self.name, dir_fd=self.folder, follow_symlinks=False)
        except FileNotFoundError:
            return None


class ProjectRoot:
    """The project's folder, and every file operation beneath it."""

    def __init__(
        self,
        root: Path,
        read_only: Mapping[str, Path | str] | None = None,
        code_paths: Iterable[str] = (),
    ) -> None:
        self.root = root.resolve()
        # Paths that run code (`code_names`) the program's skill must write: those alone of
        # them may be written.
        self.code_paths = frozenset(PurePosixPath(p) for p in code_paths)
        # A preview's mounts: links in the copy to the project's own folders, read through
        # the folder wizard named (never the link's own target) and never written.
        self.mounts = {PurePosixPath(k): Path(v) for k, v in (read_only or {}).items()}

    def _relative_parts(self, raw: str) -> list[str] | Refusal:
        text = raw.removeprefix("@")
        if "\0" in text:
            return Refusal(f"{raw!r} is not a valid path.")
        if text.startswith("~"):
            return Refusal(f"{raw} is outside the project directory {self.root}.")
        path = PurePosixPath(text)
        if path.is_absolute():
            if not (path == PurePosixPath(self.root) or path.is_relative_to(self.root)):
                return Refusal(f"{raw} is outside the project directory {self.root}.")
            path = path.relative_to(self.root)
        return [part for part in path.parts if part not in ("", ".")]

    def locate(self, raw: str, *, create_folders: bool = False) -> Located | Refusal:
        """The folder that holds `raw`'s final object (links inside the project followed).

        With `create_folders`, missing folders on the way are made (for a write).
        """
        parts = self._relative_parts(raw)
        if isinstance(parts, Refusal):
            return parts
        if not parts:
            return Refusal(f"{raw} names the project folder itself, not a file.", "folder")
        stack: list[tuple[int, str]] = [(os.open(self.root, _DIR_FLAGS), "")]
        hops = 0
        try:
            while parts:
                part = parts.pop(0)
                if part == "..":
                    if len(stack) == 1:
                        return Refusal(f"{raw} is outside the project directory {self.root}.")
                    os.close(stack.pop()[0])
                    continue
                folder = stack[-1][0]
                if parts:  # a folder on the way
                    opened = self._open_folder(folder, part, create_folders)
                    if isinstance(opened, Refusal):
                        return opened
                    if isinstance(opened, int):
                        stack.append((opened, part))
                        continue
                elif not self._is_link(folder, part):
                    return self._located(stack, part)
                here = PurePosixPath(*[n for _, n in stack[1:]], part)
                if here in self.mounts:
                    mount = self._enter_mount(raw, here, bool(parts), create_folders)
                    if isinstance(mount, Refusal):
                        return mount
                    stack.append((mount, part))
                    continue
                # A link, on the way or at the end: walk its target from where it is.
                hops += 1
                target = self._link_parts(raw, folder, part, hops)
                if isinstance(target, Refusal):
                    return target
                stack = self._restart(stack, target)
                parts = [*self._strip_root(target), *parts]
            return Refusal(f"{raw} names a folder, not a file.", "folder")
        finally:
            for descriptor, _ in stack:
                with contextlib.suppress(OSError):
                    os.close(descriptor)

    def _enter_mount(
        self, raw: str, here: PurePosixPath, inside: bool, write: bool
    ) -> int | Refusal:
        """The project's folder a preview shows at `here`, opened; or why it may not be."""
        if write:
            return Refusal(f"{raw} is in {here}, which is read-only. {READ_ONLY_NOTE}")
        if not inside:
            return Refusal(f"{raw} names a folder, not a file.", "folder")
        try:
            return os.open(self.mounts[here], _DIR_FLAGS)
        except OSError as exc:
            return Refusal(f"{here} cannot be opened: {exc.strerror}.")

    @staticmethod
    def _located(stack: list[tuple[int, str]], name: str) -> Located | Refusal:
        relative = PurePosixPath(*[n for _, n in stack[1:]], name)
        closed = CLOSED_FOLDERS.intersection(p.lower() for p in relative.parts)
        if closed:
            return Refusal(f"{relative} is inside a git folder; wizard's tools never open one.")
        folder = os.dup(stack[-1][0])
        return Located(folder, name, relative)

    def _restart(self, stack: list[tuple[int, str]], target: list[str]) -> list[tuple[int, str]]:
        """The folder stack a link's target is walked from: the root for an absolute one."""
        if target and target[0] == "/":
            for descriptor, _ in stack[1:]:
                os.close(descriptor)
            return stack[:1]
        return stack

    @staticmethod
    def _strip_root(target: list[str]) -> list[str]:
        return target[1:] if target and target[0] == "/" else target

    @staticmethod
    def _is_link(folder: int, name: str) -> bool:
        try:
            return stat.S_ISLNK(os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode)
        except OSError:
            return False

    def _link_parts(self, raw: str, folder: int, name: str, hops: int) -> list[str] | Refusal:
        """A link's target as parts to walk ("/" first for one from the project root)."""
        if hops > MAX_LINK_HOPS:
            return Refusal(f"{raw} is a symlink loop: it leads back to itself and names no file.")
        target = os.readlink(name, dir_fd=folder)
        path = PurePosixPath(target)
        if path.is_absolute():
            if not (path == PurePosixPath(self.root) or path.is_relative_to(self.root)):
                return Refusal(f"{raw} is a symlink that leads outside the project ({target}).")
            return ["/", *(p for p in path.relative_to(self.root).parts if p != ".")]
        return [p for p in path.parts if p not in ("", ".")]

    @staticmethod
    def _open_folder(folder: int, name: str, create: bool) -> int | Literal["link"] | Refusal:
        """The folder `name` opened, "link" when it is a symlink, or why it cannot be."""
        for _ in range(2):
            try:
                return os.open(name, _DIR_FLAGS, dir_fd=folder)
            except FileNotFoundError:
                if not create:
                    return Refusal(f"{name}: no such folder.", "missing")
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o777, dir_fd=folder)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR) and ProjectRoot._is_link(folder, name):
                    return "link"
                return Refusal(f"{name} is not a folder ({exc.strerror}).")
        return Refusal(f"{name}: cannot be made a folder.")

    def read_bytes(
        self, raw: str, *, env: bool = False, max_bytes: int = MAX_READ_BYTES
    ) -> bytes | Refusal:
        """The content of the regular file `raw` (an env file only when `env`), checked."""
        located = self.locate(raw)
        if isinstance(located, Refusal):
            return located
        with located:
            flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
            try:
                descriptor = os.open(located.name, flags, dir_fd=located.folder)
            except FileNotFoundError:
                return Refusal(f"{raw}: no such file.", "missing")
            except OSError as exc:
                return Refusal(f"{raw} cannot be opened: {exc.strerror}.")
            info = os.fstat(descriptor)
            refusal = self.refuse(raw, located, info, env=env)
            if refusal is None and info.st_size > max_bytes:
                refusal = Refusal(
                    f"{raw} is {info.st_size:,} bytes, more than the {max_bytes:,} a file "
                    "tool reads; look at parts of it with a command (head, sed -n)."
                )
            if refusal is not None:
                os.close(descriptor)
                return refusal
            with os.fdopen(descriptor, "rb") as handle:
                return handle.read(max_bytes + 1)

    def write_bytes(
        self, raw: str, data: bytes, *, env: bool = False, new_mode: int = 0o644
    ) -> PurePosixPath | Refusal:
        """Replace (or create, with `new_mode`) `raw` with `data`, atomically.

        An existing file keeps its mode. The new content goes to a temp file in the held
        folder and is renamed over the name: a link or pipe there is refused, never written
        through. Missing folders on the way are made.
        """
        # Judged by the name asked for before a folder is made, and by what it resolved to.
        parts = self._relative_parts(raw)
        if (refusal := self._code_refusal(parts)) is not None:
            return refusal
        located = self.locate(raw, create_folders=True)
        if isinstance(located, Refusal):
            return located
        with located:
            if (refusal := self._code_refusal(list(located.relative.parts))) is not None:
                return refusal
            info = located.lstat()
            if info is not None:
                refusal = self.refuse(raw, located, info, env=env)
                if refusal is not None:
                    return refusal
            elif (refusal := self._name_refusal(raw, located, env)) is not None:
                return refusal
            mode = stat.S_IMODE(info.st_mode) if info is not None else new_mode
            write_in(located.folder, located.name, data, mode)
            return located.relative

    def _code_refusal(self, parts: list[str] | Refusal) -> Refusal | None:
        """Why a path that runs code as the user (`code_names`) may not be written, unless
        the program's skill must write it."""
        if isinstance(parts, Refusal) or ".." in parts:
            return None  # the walk judges these
        relative = PurePosixPath(*parts)
        if parts and runs_code(relative) and relative not in self.code_paths:
            return Refusal(refusal_text(str(relative)))
        return None

    def refuse(
        self, raw: str, located: Located, info: os.stat_result, *, env: bool = False
    ) -> Refusal | None:
        """Why the object `info` describes may not be used (as an env file when `env`)."""
        if stat.S_ISDIR(info.st_mode):
            return Refusal(f"{raw} is a folder, not a file.", "folder")
        if not stat.S_ISREG(info.st_mode):
            return Refusal(f"{raw} is not a regular file (a pipe, socket, device or link).")
        if (refusal := self._name_refusal(raw, located, env)) is not None:
            return refusal
        if not env and info.st_nlink > 1 and (info.st_dev, info.st_ino) in self.env_inodes():
            return Refusal(f"{raw} is another name of an environment file; refused.")
        return None

    @staticmethod
    def _name_refusal(raw: str, located: Located, env: bool) -> Refusal | None:
        if env and not located.name.startswith(".env"):
            return Refusal(f"{raw} is not an environment file (.env, .env.local, ...).")
        if not env and is_env_name(located.name):
            return Refusal(
                f"{raw} is an environment file. Use check_env_keys to see which keys exist "
                "and set_env_values to set them; values are never shown."
            )
        return None

    def env_inodes(self) -> set[tuple[int, int]]:
        """The (device, inode) of every `.env*` file in the project."""
        found = set()
        for folder, name in self._walk_names():
            if is_env_name(name):
                with contextlib.suppress(OSError):
                    info = os.stat(Path(folder, name), follow_symlinks=False)
                    if stat.S_ISREG(info.st_mode):
                        found.add((info.st_dev, info.st_ino))
        return found

    def env_aliases(self) -> list[Path]:
        """Other names, inside the project, of its `.env*` files (hard links): one walk, one
        `lstat` a file (this is asked of every file when a run's sandbox policy is made)."""
        inodes = set()
        linked = []  # every other file with more than one name
        for folder, name in self._walk_names():
            with contextlib.suppress(OSError):
                info = os.stat(f"{folder}/{name}", follow_symlinks=False)
                if is_env_name(name):
                    if stat.S_ISREG(info.st_mode):
                        inodes.add((info.st_dev, info.st_ino))
                elif info.st_nlink > 1:
                    linked.append((folder, name, (info.st_dev, info.st_ino)))
        return [Path(folder, name) for folder, name, inode in linked if inode in inodes]

    def _walk_names(self) -> Iterator[tuple[str, str]]:
        for folder, folders, files in os.walk(self.root):
            folders[:] = [f for f in folders if f not in _SKIP_FOR_ENV]
            for name in files:
                yield folder, name
