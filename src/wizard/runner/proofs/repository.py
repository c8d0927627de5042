"""The project's git remotes, read from its repository's config file as text: wizard runs no
git command in a repository the agent could have touched (its config can run code)."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

_SECTION = re.compile(r'^\s*\[\s*remote\s+"([^"]*)"\s*\]\s*$', re.IGNORECASE)
_URL = re.compile(r"^\s*url\s*=\s*(.+?)\s*$", re.IGNORECASE)
_MAX_CONFIG_BYTES = 1_000_000


def remotes(project: Path) -> list[str]:
    """The URLs of the remotes of the repository at `project` (none when it has none)."""
    config = _config_file(project)
    text = _read(config) if config is not None else None
    if text is None:
        return []
    found, in_remote = [], False
    lines = text.splitlines()
    for line in lines:
        if line.lstrip().startswith("["):
            in_remote = _SECTION.match(line) is not None
        elif in_remote and (url := _URL.match(line)):
            found.append(url[1].strip('"'))
    return found


def _config_file(project: Path) -> Path | None:
    """`.git/config`, or, for a worktree's `.git` file, its repository's."""
    dot_git = project / ".git"
    if dot_git.is_dir() and not dot_git.is_symlink():
        return dot_git / "config"
    pointer = _read(dot_git) or ""
    if not pointer.startswith("gitdir:"):
        return None
    folder = (project / pointer[len("gitdir:") :].strip()).resolve()
    if (common := _read(folder / "commondir")) is not None:
        folder = (folder / common.strip()).resolve()
    return folder / "config"


def _read(path: Path) -> str | None:
    """A small regular file's text; None for anything else (a pipe would block the read)."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(descriptor, "rb") as file:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return None
        return file.read(_MAX_CONFIG_BYTES).decode(errors="replace")


def shown_remote(url: str) -> str:
    """A remote's address as wizard prints it: any credential in it masked."""
    return re.sub(r"^([a-z+]+://)[^@/]*@", r"\1***@", url.strip(), flags=re.IGNORECASE)


def same_repository(named: str, remote: str) -> bool:
    """Whether `named` ("github.com/acme/app", "acme/app", a URL) is the repository at
    `remote` (`git@github.com:acme/app.git`, `https://github.com/acme/app`)."""
    wanted, have = _path(named), _path(remote)
    if not wanted or not have:
        return False
    return have == wanted or (have.endswith(f"/{wanted}") and wanted.count("/") >= 1)


def _path(url: str) -> str:
    """host/owner/name of a repository's address, lowercase."""
    url = url.strip().lower()
    url = re.sub(r"^[a-z+]+://", "", url)
    url = re.sub(r"^[^@/]+@", "", url)  # user@ (and a token@)
    url = re.sub(r"^([^/:]+):(?!\d)", r"\1/", url)  # scp-like host:path
    url = re.sub(r":\d+/", "/", url)
    return url.removesuffix("/").removesuffix(".git").strip("/")
