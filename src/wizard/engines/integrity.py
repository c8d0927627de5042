"""Is an installed engine still the one that was installed?

pi's host and the Claude CLI run outside the OS sandbox, so a file of theirs that changed
after the install (a module the host loads lazily, say) would run unsandboxed. The agent
cannot write there (its file tools stay in the project; its commands write only the project
and the run's temp folder), and wizard checks that at every start:

- **pi** (and the sandbox runtime beside it): when wizard installs the tree it makes it
  read-only and records each file's type, size, times and inode (`record_tree`) in wizard's
  state folder, which commands cannot read or write. A run compares the tree to the record
  (`tree_changes`); any file changed, added or removed is named. A change can hide from the
  size and mtime, never from the ctime, which no user process can set.
- **the Claude CLI** ships inside the SDK's wheel: its SHA-256 is checked against the
  wheel's own `RECORD`, once per change of its stat (`file_matches_record`).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import stat
from pathlib import Path

from wizard.atomic import write_atomically
from wizard.walk import walk

_Entry = list[int]  # mode, size, mtime_ns, ctime_ns, inode


def _fingerprint(info: os.stat_result) -> _Entry:
    return [info.st_mode, info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino]


def tree_fingerprints(root: Path) -> dict[str, _Entry]:
    """Every file, link and folder beneath `root`, fingerprinted (links not followed)."""
    return {path: _fingerprint(info) for path, _, info in walk(root, lambda name: True)}


def make_read_only(root: Path) -> None:
    """Take the write bits off everything beneath `root` (and `root`). What is read-only
    already is left alone: a chmod changes the ctime, which a record holds."""
    for folder, folders, files in os.walk(root, topdown=False):
        for name in (*files, *folders):
            _drop_write_bits(os.path.join(folder, name))
    _drop_write_bits(str(root))


def _drop_write_bits(path: str) -> None:
    mode = os.lstat(path).st_mode
    if not stat.S_ISLNK(mode) and mode & 0o222:
        with contextlib.suppress(PermissionError):  # another user's tree: theirs to protect
            os.chmod(path, stat.S_IMODE(mode) & ~0o222)


def make_writable(root: Path) -> None:
    """Give the owner back the write bit beneath `root`, so the tree can be removed."""
    if not root.exists():
        return
    os.chmod(root, stat.S_IMODE(root.stat().st_mode) | 0o200)
    for folder, folders, _ in os.walk(root):
        for name in folders:
            with contextlib.suppress(OSError):
                path = os.path.join(folder, name)
                os.chmod(path, stat.S_IMODE(os.lstat(path).st_mode) | 0o200)


def record_tree(root: Path, record: Path) -> None:
    """Record the tree beneath `root` as it is now."""
    record.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(record, json.dumps(tree_fingerprints(root)).encode(), 0o600)


def tree_changes(root: Path, record: Path) -> list[str] | None:
    """The paths beneath `root` that differ from the record; None when there is no record."""
    try:
        recorded = json.loads(record.read_text())
    except (OSError, ValueError):
        return None
    now = tree_fingerprints(root)
    if now == recorded:
        return []
    return sorted(p for p in {*recorded, *now} if recorded.get(p) != now.get(p))


def file_matches_record(path: Path, sha256_b64: str, cache: Path) -> bool:
    """Whether `path`'s SHA-256 is the one a wheel's RECORD gives (urlsafe base64, no
    padding); a match is remembered against the file's stat, so it is hashed once."""
    info = _fingerprint(path.stat())
    key = f"{path}:{sha256_b64}"
    with contextlib.suppress(OSError, ValueError):
        if json.loads(cache.read_text()).get(key) == info:
            return True
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    actual = base64.urlsafe_b64encode(digest.digest()).decode().rstrip("=")
    if actual != sha256_b64:
        return False
    cache.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(cache, json.dumps({key: info}).encode(), 0o600)
    return True
