"""Is an installed engine still the one that was installed?

pi's host and the Claude CLI run outside the OS sandbox, so a file of theirs that changed
after the install (a module the host loads lazily, say) would run unsandboxed. The agent
cannot write there (its file tools stay in the project; its commands write only the project
and the run's temp folder), and wizard checks that at every start:

- **pi** (and the sandbox runtime beside it): when wizard installs the tree it makes it
  read-only and records each file's type, size, times and inode (`record_tree`) in wizard's
  state folder, which commands cannot read or write. A run compares the tree to the record
  (`tree_changes`); any file changed, added or removed is named. The comparison takes one
  `lstat` per recorded entry, without listing a folder: an entry added or removed changes
  its folder's times, which the record holds too (a folder changed moments before it was
  recorded could change again within one timestamp tick: such a record is compared by a
  full walk, then rewritten). A change can hide from the size and mtime, never from the
  ctime, which no user process can set.
- **the sandbox runtime alone**, for a run that runs nothing else of the tree (the anthropic
  harness): only the runtime's package, those of the packages it depends on
  (`bundle.runtime_folders`) and the folders above them are compared (`tree_changes`'s
  `within`): 1,600 of the tree's 22,000 entries.
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
import struct
import time
from collections.abc import Callable, Collection
from pathlib import Path

from wizard.atomic import write_atomically
from wizard.walk import walk

# A record is a header line (JSON, with the number of entries), then every entry's
# fingerprint (`_PACKED`), then their paths in the same order, NUL-separated. A record of an
# older format is checked by a full walk, then rewritten (`_older_record`).
_FORMAT = 3
_PACKED = struct.Struct("<QqqqQ")
# A folder changed this close to the record's making could change again within the same
# timestamp tick and keep its stamp; such a record is only ever checked by a full walk.
_RACY_NS = 2_000_000_000


def _fingerprint(info: os.stat_result) -> bytes:
    """Type and mode, size, modification and change times, inode, packed: a check compares
    the whole tree's at once."""
    return _PACKED.pack(info.st_mode, info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)


def tree_fingerprints(root: Path) -> dict[str, bytes]:
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
    _write_record(record, *_walked(root))


def _walked(root: Path) -> tuple[dict[str, bytes], int]:
    """The tree's fingerprints, `root`'s own under "" (taken before its listing is read), and
    when the walk began."""
    began = time.time_ns()
    own = _fingerprint(root.lstat())
    return {"": own, **tree_fingerprints(root)}, began


def _write_record(record: Path, entries: dict[str, bytes], began: int) -> None:
    """Write a record. It may be checked entry by entry (`_as_recorded`) unless a folder in it
    changed within `_RACY_NS` of the walk's start."""
    stamps = map(_PACKED.unpack, entries.values())
    quiet = all(max(s[2], s[3]) < began - _RACY_NS for s in stamps if stat.S_ISDIR(s[0]))
    header = {"format": _FORMAT, "by_entry": quiet and "" in entries, "entries": len(entries)}
    paths = "\0".join(entries).encode(errors="surrogateescape")
    record.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(record, b"".join([json.dumps(header).encode(), b"\n", *entries.values(),
                                       paths]), 0o600)  # fmt: skip


def _read_record(record: Path) -> tuple[dict[str, bytes], bool] | None:
    """A record's entries, and whether it may be checked entry by entry; None when there is
    none (or it cannot be read)."""
    try:
        data = record.read_bytes()
    except OSError:
        return None
    head, _, body = data.partition(b"\n")
    try:
        header = json.loads(head)
    except ValueError:
        return None
    if not isinstance(header, dict):
        return None
    if header.get("format") != _FORMAT:
        return _older_record(header, body)
    count, size = header.get("entries"), _PACKED.size
    if not isinstance(count, int) or len(body) < count * size:
        return None
    paths = body[count * size :].decode(errors="surrogateescape").split("\0") if count else []
    if len(paths) != count:
        return None
    fingerprints = (body[at : at + size] for at in range(0, count * size, size))
    return dict(zip(paths, fingerprints, strict=True)), bool(header.get("by_entry"))


def _older_record(header: dict[str, object], body: bytes) -> tuple[dict[str, bytes], bool] | None:
    """A record of a format before this one's entries, to be checked by a full walk (which
    rewrites it): the first format is one JSON object of lists, the second a header, then
    each entry's path and its fingerprint's numbers as text, all NUL-separated."""
    if "format" not in header:
        listed = [(path, fp) for path, fp in header.items() if isinstance(fp, list)]
    elif header.get("format") == 2:
        fields = body.decode(errors="surrogateescape").split("\0") if body else []
        if len(fields) % 2:
            return None
        pairs = zip(fields[0::2], fields[1::2], strict=True)
        listed = [(path, fp.split(" ")) for path, fp in pairs]
    else:
        return None
    try:
        return {path: _PACKED.pack(*map(int, fp)) for path, fp in listed}, False
    except (ValueError, struct.error):
        return None


def _as_recorded(root: Path, entries: dict[str, bytes]) -> bool:
    """Whether every recorded entry, `root` included, still has its fingerprint: one `lstat`
    each, no listing. Nothing was added or removed either: that changes its folder's
    modification and change times, and no process can set a change time back."""
    base, now = f"{root}/", bytearray()
    for path in entries:
        try:
            now += _fingerprint(os.lstat(base + path if path else root))
        except OSError:
            return False
    return now == b"".join(entries.values())


def tree_changes(
    root: Path, record: Path, within: Collection[str] | None = None
) -> list[str] | None:
    """The paths beneath `root` that differ from the record; None when there is no record.
    With `within` (folders beneath `root`), only the paths in those folders and the folders
    above them. A tree found unchanged by a full walk gets its record rewritten in a form the
    next check can take entry by entry."""
    recorded = _read_record(record)
    if recorded is None:
        return None
    entries, by_entry = recorded
    covered = _covered(within)
    checked = entries if within is None else {p: fp for p, fp in entries.items() if covered(p)}
    if by_entry and _as_recorded(root, checked):
        return []
    walked, began = _walked(root)
    # The first format did not record the root itself.
    now = walked if "" in entries else {path: fp for path, fp in walked.items() if path}
    if now == entries:
        if not by_entry:
            _write_record(record, walked, began)
        return []
    changed = (p for p in {*entries, *now} if entries.get(p) != now.get(p) and covered(p))
    return sorted(p or "." for p in changed)


def _covered(within: Collection[str] | None) -> Callable[[str], bool]:
    """Whether a path is in one of the folders `within`, one of them, or a folder above one
    (where an entry added or removed would change what Node finds); every path without."""
    if within is None:
        return lambda path: True
    above = {"/".join(parts[:end]) for parts in (f.split("/") for f in within)
             for end in range(len(parts) + 1)}  # fmt: skip
    beneath = tuple(f"{folder}/" for folder in within)
    return lambda path: path in above or path.startswith(beneath)


def file_matches_record(path: Path, sha256_b64: str, cache: Path) -> bool:
    """Whether `path`'s SHA-256 is the one a wheel's RECORD gives (urlsafe base64, no
    padding); a match is remembered against the file's stat, so it is hashed once."""
    info = _fingerprint(path.stat()).hex()
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
