"""A project tree's fingerprint, for tests that must show a run left it exactly as it was:
every file, folder and link (none followed), with its content or target, mode and mtime."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Collection
from pathlib import Path


def tree_fingerprint(
    root: Path, skip: Collection[str] = ()
) -> dict[str, tuple[str, int, int, str]]:
    """Path → (kind, mode, mtime in ns, sha256 of the content or the link's target), for
    everything beneath `root` but the top-level names in `skip`."""
    found: dict[str, tuple[str, int, int, str]] = {}
    for folder, folders, files in os.walk(root):
        relative = Path(folder).relative_to(root)
        if relative.parts and relative.parts[0] in skip:
            continue
        for name in [*folders, *files]:
            path = Path(folder, name)
            key = str(path.relative_to(root))
            if key in skip:
                continue
            info = path.lstat()
            if stat.S_ISLNK(info.st_mode):
                kind, digest = "link", hashlib.sha256(os.fsencode(os.readlink(path))).hexdigest()
            elif stat.S_ISDIR(info.st_mode):
                kind, digest = "folder", ""
            else:
                kind, digest = "file", hashlib.sha256(path.read_bytes()).hexdigest()
            found[key] = (kind, stat.S_IMODE(info.st_mode), info.st_mtime_ns, digest)
    return found


def tree_hash(root: Path, skip: Collection[str] = ()) -> str:
    """One hash of `tree_fingerprint(root, skip)`: equal exactly when nothing differs."""
    text = json.dumps(sorted(tree_fingerprint(root, skip).items()))
    return hashlib.sha256(text.encode()).hexdigest()
