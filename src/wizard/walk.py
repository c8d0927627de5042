"""One walk of a tree (a project's for the journal, an engine's for its record): every entry,
never through a link."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path


def walk(
    root: Path, enter: Callable[[str], bool], top: Callable[[str], bool] = lambda name: True
) -> Iterator[tuple[str, str, os.stat_result]]:
    """Every entry beneath `root` as (its path from `root`, its name, its own `lstat`); a
    folder is walked into when `enter(name)` says so; of `root`'s own entries, only those
    `top(name)` takes. What cannot be listed or looked at (it went away, no permission) is
    passed over."""
    stack = [""]
    while stack:
        relative = stack.pop()
        try:
            found = [i for i in os.scandir(root / relative) if relative or top(i.name)]
        except OSError:
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
