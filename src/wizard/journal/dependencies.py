"""Dependency and build folders (`node_modules`, `.venv`, ...): journaled by each file's
metadata, not its content.

They are too big to copy at every run, and yet what runs next lives there: a payload appended
to `node_modules/leftpad/index.js` runs on the user's next `node`, a `.pth` file in a venv on
its next Python, a fake `node_modules/.bin/jest` on the next `npm test`. A folder's own
modification time does not change when a file inside it is edited in place, so each file is
fingerprinted: its type, size, modification and change times, inode and mode (a link: its
target), as the engine record does. The change time cannot be set back by a command, so an
edit that restores the modification time is still seen. (The listing itself is
`listings.list_folder`, which a run's first snapshot may have taken ahead.)

A folder's listing is kept in the journal's state, named by its digest
(`deps/<digest>.listing`; a journal kept before listings were `find`'s holds JSON ones,
`deps/<digest>.json`), so a run compares the listings before and after it file by file. Their
content is not kept: `wizard undo` removes what was added or changed in place and says to
reinstall.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path

from wizard.atomic import write_atomically
from wizard.listings import FolderListing, from_json, read_listing

# What a file in a dependency folder became during a run.
ADDED, CHANGED, REMOVED = "added", "changed", "removed"
_SUFFIX = ".listing"


def keep_listing(state: Path, listing: FolderListing) -> str:
    """Keep a folder's listing in the journal's state; its digest."""
    target = state / "deps" / f"{listing.digest}{_SUFFIX}"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(target, listing.data, 0o600)
    return listing.digest


def load_listing(state: Path, digest: object) -> dict[str, str] | None:
    """A kept listing, or None (pruned, or a record from before listings were kept)."""
    if not isinstance(digest, str):
        return None
    try:
        return read_listing((state / "deps" / f"{digest}{_SUFFIX}").read_bytes())
    except OSError:
        pass
    except ValueError:  # not a listing
        return None
    try:  # kept by a wizard before listings were `find`'s
        loaded = json.loads((state / "deps" / f"{digest}.json").read_text())
        return {str(path): from_json(str(text)) for path, text in loaded.items()}
    except (OSError, ValueError, AttributeError):
        return None


def dependency_changes(
    state: Path, before: Mapping[str, object], after: Mapping[str, object]
) -> dict[str, str]:
    """Each file of a dependency folder that a run added, changed or removed (a folder whose
    listing is gone: the folder itself, as changed)."""
    changes: dict[str, str] = {}
    for folder in sorted({*before, *after}):
        if before.get(folder) == after.get(folder):
            continue
        old = {} if folder not in before else load_listing(state, before[folder])
        new = {} if folder not in after else load_listing(state, after[folder])
        if old is None or new is None:
            changes[folder] = CHANGED
            continue
        for name in sorted({*old, *new}):
            if old.get(name) != new.get(name):
                kind = ADDED if name not in old else REMOVED if name not in new else CHANGED
                changes[f"{folder}/{name}"] = kind
    return changes


def prune_listings(state: Path, kept: Iterable[object]) -> None:
    """Remove the listings no kept record names."""
    names = {f"{digest}{suffix}" for digest in kept if isinstance(digest, str)
             for suffix in (_SUFFIX, ".json")}  # fmt: skip
    folder = state / "deps"
    if not folder.is_dir():
        return
    for path in folder.iterdir():
        if path.name not in names:
            path.unlink(missing_ok=True)
