"""One walk of a tree (a project's for the journal, an engine's for its record): every entry,
never through a link; and the removal of a tree wizard made, whatever modes the agent left
on its folders."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from collections.abc import Callable, Collection, Iterator
from pathlib import Path


def is_repository(folder: Path | str, names: Collection[str]) -> bool:
    """Whether `folder`, whose entries are `names`, is a git repository by what it holds,
    whatever its name: git takes a folder with a `HEAD`, an `objects/` and a `refs/` for
    one (`git init --bare docs`), and runs its config's commands (`core.fsmonitor`) there."""
    return (
        "HEAD" in names and "objects" in names and "refs" in names
        and os.path.isdir(os.path.join(folder, "objects"))
        and os.path.isdir(os.path.join(folder, "refs"))
    )  # fmt: skip


def walk(
    root: Path,
    enter: Callable[[str], bool],
    top: Callable[[str], bool] = lambda name: True,
    repository: Callable[[str], None] | None = None,
) -> Iterator[tuple[str, str, os.stat_result]]:
    """Every entry beneath `root` as (its path from `root`, its name, its own `lstat`); a
    folder is walked into when `enter(name)` says so; of `root`'s own entries, only those
    `top(name)` takes. A folder beneath `root` that is a repository by what it holds
    (`is_repository`) is given to `repository` instead of walked, when there is one. What
    cannot be listed or looked at (it went away, no permission) is passed over."""
    stack = [""]
    while stack:
        relative = stack.pop()
        try:
            found = [i for i in os.scandir(root / relative) if relative or top(i.name)]
        except OSError:
            continue
        if repository is not None and relative:
            names = {i.name for i in found}
            if "HEAD" in names and is_repository(root / relative, names):
                repository(relative)
                continue
        for item in found:
            path = f"{relative}/{item.name}" if relative else item.name
            try:
                info = item.stat(follow_symlinks=False)
            except OSError:
                continue
            yield path, item.name, info
            if stat.S_ISDIR(info.st_mode) and enter(item.name):
                stack.append(path)


def remove_tree(folder: Path) -> None:
    """Remove a folder wizard made (a preview's copy, a fleet's workspace), read-only
    folders in it included (a command of the agent may have made one); a link in it is
    removed, never followed, nor its target's mode changed."""
    if not folder.is_dir() or folder.is_symlink():
        return
    os.chmod(folder, 0o700)
    for parent, folders, _ in os.walk(folder):
        for name in folders:
            path = os.path.join(parent, name)
            if not os.path.islink(path):
                with contextlib.suppress(OSError):
                    os.chmod(path, 0o700)
    shutil.rmtree(folder, ignore_errors=True)
