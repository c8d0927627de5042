"""Reading a project tree exactly, for comparisons before and after an undo."""

from __future__ import annotations

import os
from pathlib import Path


def state(root: Path) -> dict[str, tuple[str, bytes | str, int]]:
    """Every file and symlink below `root` (not .git): kind, content or target, mode."""
    found: dict[str, tuple[str, bytes | str, int]] = {}
    for folder, folders, files in os.walk(root):
        folders[:] = [f for f in folders if f != ".git"]
        for name in files + [f for f in folders if Path(folder, f).is_symlink()]:
            path = Path(folder, name)
            key = str(path.relative_to(root))
            if path.is_symlink():
                found[key] = ("link", os.readlink(path), 0)
            else:
                found[key] = ("file", path.read_bytes(), path.stat().st_mode & 0o7777)
    return found
