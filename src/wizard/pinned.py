"""The programs wizard and its engines run by name, pinned before anything starts.

wizard runs `git` (the journal), its engines `node` and `npm`, and the sandbox runtime
`bwrap`, `socat` and `rg` (or `sandbox-exec`), each outside the OS sandbox, by name: the
first on `PATH`. A user's `PATH` may hold a folder of the project: an activated `.venv/bin`,
a `node_modules/.bin` (direnv, npm's scripts). Commands write there (an install does), so a
hostile agent, or a package it installs, could put a `git` or a `bwrap` there, and wizard
would run it outside the sandbox at its next step.

So before wizard starts anything (`__main__`), each of those names is looked up on `PATH`
without its relative folders and those in the project (the `--project` of the command line,
else the working folder), and a folder of wizard's own that links each name to what was
found goes first on `PATH`. Every process wizard starts inherits it: the journal's git, the
engines, the runtime's sandboxes. A command inside the sandbox finds nothing there (wizard's
state folder is closed to it) and looks further, as before: the agent's `python` is still the
project's `.venv/bin/python`. A name found nowhere else is not pinned (what looks it up
fails, or finds what it finds, as before).

Standard library only, and the leaves `argv` and `layout`: it runs before the rest loads.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
from collections.abc import MutableMapping, Sequence
from pathlib import Path

from wizard.argv import project_named
from wizard.layout import state_root

PINNED = ("git", "node", "npm", "bwrap", "socat", "rg", "sandbox-exec")


def pin_tools(argv: Sequence[str], environ: MutableMapping[str, str]) -> Path | None:
    """Put a folder of links to wizard's programs first on `environ`'s `PATH` (see above);
    the folder, or None if none was (no such program outside the project, or no folder can
    be written)."""
    path = environ.get("PATH", os.defpath)
    project = Path(os.path.realpath(project_named(argv)))
    trusted = os.pathsep.join(trusted_folders(path, project))
    if not trusted:  # an empty one would be the working folder
        return None
    found = {name: where for name in PINNED if (where := shutil.which(name, path=trusted))}
    if not found or not trusted_folders(str(state_root()), project):  # the state in the project
        return None
    try:
        folder = _links(found)
    except OSError:
        return None
    environ["PATH"] = os.pathsep.join((str(folder), path))
    return folder


def trusted_folders(path: str, project: Path) -> list[str]:
    """The folders of a `PATH` value that are absolute and not `project` nor in it (links
    followed), each as written."""
    kept = []
    for entry in path.split(os.pathsep):
        if not entry or not os.path.isabs(entry):
            continue
        real = Path(os.path.realpath(entry))
        if real == project or project in real.parents:
            continue
        kept.append(entry)
    return kept


def _links(found: dict[str, str]) -> Path:
    """wizard's folder of links to `found`, one per set of targets (made once, whole)."""
    targets = "\n".join(f"{name}={os.path.realpath(where)}" for name, where in found.items())
    digest = hashlib.sha256(targets.encode()).hexdigest()[:16]
    root = state_root() / "pinned"
    folder = root / digest
    if folder.is_dir():
        return folder
    root.mkdir(parents=True, exist_ok=True)
    making = Path(tempfile.mkdtemp(prefix=".making-", dir=root))
    try:
        for name, where in found.items():
            (making / name).symlink_to(os.path.realpath(where))
        making.chmod(0o755)
        with contextlib.suppress(FileExistsError, OSError):  # another wizard made it first
            making.rename(folder)
    finally:
        shutil.rmtree(making, ignore_errors=True)
    if not folder.is_dir():
        raise OSError(f"{folder} could not be made")
    return folder
