"""The project's git remotes, read from its repository's config file as text: wizard runs no
git command in a repository the agent could have touched (its config can run code)."""

from __future__ import annotations

import re
from pathlib import Path

_SECTION = re.compile(r'^\s*\[\s*remote\s+"([^"]*)"\s*\]\s*$', re.IGNORECASE)
_URL = re.compile(r"^\s*url\s*=\s*(.+?)\s*$", re.IGNORECASE)
_MAX_CONFIG_BYTES = 1_000_000


def remotes(project: Path) -> list[str]:
    """The URLs of the remotes of the repository at `project` (none when it has none)."""
    config = _config_file(project)
    if config is None:
        return []
    try:
        with config.open("rb") as file:
            lines = file.read(_MAX_CONFIG_BYTES).decode(errors="replace").splitlines()
    except OSError:
        return []
    found, in_remote = [], False
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
    try:
        pointer = dot_git.read_text(errors="replace") if dot_git.is_file() else ""
    except OSError:
        return None
    if not pointer.startswith("gitdir:"):
        return None
    folder = (project / pointer[len("gitdir:") :].strip()).resolve()
    common = folder / "commondir"
    if common.is_file():
        folder = (folder / common.read_text(errors="replace").strip()).resolve()
    return folder / "config"


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
