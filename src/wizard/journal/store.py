"""Snapshots of a project's files in a private git object store, and restoring them.

Git's object store is the engine: deduplicated, and fast on large trees because a persistent
index lets a snapshot rehash only the files whose stat changed. All of it lives in wizard's
state folder (`git --git-dir=<state>/journal.git --work-tree=<project>` with an index of its
own), so the user's repository, index, stash and refs are never touched, and nothing is
written into the project. The user's `.gitignore` does not apply (`.env` is journaled too);
only `.git` and the big dependency and build folders in `HEAVY_FOLDERS` are left out, and
those are fingerprinted so an outro can say the run changed them.

Git stores a file's content, whether it is executable, and symlinks. The exact permission
bits of files that differ from git's two modes are kept beside each snapshot.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from wizard.atomic import symlink_atomically, write_atomically
from wizard.errors import ConfigError

HEAVY_FOLDERS = frozenset(
    {
        "node_modules", ".venv", "venv", "dist", "build", ".next", ".nuxt", "target",
        "__pycache__", ".tox", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".gradle",
        ".turbo", ".cache",
    }
)  # fmt: skip
_EXCLUDES = [f":(exclude,glob)**/{name}/**" for name in sorted(HEAVY_FOLDERS)]
_GIT_MODES = {"100644": 0o644, "100755": 0o755}


@dataclass(frozen=True)
class Snapshot:
    """A project's files at one moment: a git tree, odd permission bits, heavy folders."""

    tree: str
    modes: dict[str, int] = field(default_factory=dict)
    heavy: dict[str, int] = field(default_factory=dict)  # folder → its mtime (ns)


@dataclass(frozen=True)
class Change:
    """One path that differs between two snapshots, and what it was in the first."""

    status: str  # A: only in the second; D: only in the first; M/T: in both, different
    path: str
    old_mode: str
    old_blob: str


def git_available() -> bool:
    """Whether the journal's engine, git, is installed."""
    return shutil.which("git") is not None


class GitStore:
    """The journal's object store for one project."""

    def __init__(self, project: Path, state: Path) -> None:
        self.project = project
        self.state = state
        self.git_dir = state / "journal.git"

    def _git(self, *args: str, store: bool = True) -> bytes:
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
        }
        if store:
            env |= {
                "GIT_DIR": str(self.git_dir),
                "GIT_WORK_TREE": str(self.project),
                "GIT_INDEX_FILE": str(self.state / "index"),
            }
        settings = ("core.autocrlf=false", "core.fileMode=true", "core.symlinks=true")
        command = ["git", *(arg for s in settings for arg in ("-c", s)), *args]
        done = subprocess.run(command, env=env, cwd=self.project, capture_output=True)
        if done.returncode != 0:
            raise ConfigError(
                f"The run journal's git failed: git {' '.join(args[:2])}: "
                f"{done.stderr.decode(errors='replace').strip()}",
                f"Its store is {self.git_dir}; remove it to start the journal afresh.",
            )
        return done.stdout

    def _ensure(self) -> None:
        if not (self.git_dir / "HEAD").exists():
            self.state.mkdir(parents=True, exist_ok=True)
            self._git("init", "--quiet", "--bare", str(self.git_dir), store=False)

    def snapshot(self) -> Snapshot:
        """Record the project's files now."""
        self._ensure()
        self._git("add", "--all", "--force", "--", ".", *_EXCLUDES)
        tree = self._git("write-tree").decode().strip()
        modes, heavy = self._walk()
        return Snapshot(tree, modes, heavy)

    def _walk(self) -> tuple[dict[str, int], dict[str, int]]:
        """Permission bits git cannot keep, and the heavy folders' fingerprints."""
        modes: dict[str, int] = {}
        heavy: dict[str, int] = {}
        for root, folders, files in os.walk(self.project):
            relative = Path(root).relative_to(self.project)
            for name in list(folders):
                if name == ".git" or name in HEAVY_FOLDERS:
                    folders.remove(name)
                    if name != ".git":
                        heavy[str(relative / name)] = os.stat(Path(root, name)).st_mtime_ns
            for name in files:
                stat = os.lstat(Path(root, name))
                bits = stat.st_mode & 0o7777
                if not Path(root, name).is_symlink() and bits != (0o755 if bits & 0o100 else 0o644):
                    modes[str(relative / name)] = bits
        return modes, heavy

    def keep(self, ref: str, tree: str) -> None:
        """Keep `tree` alive under `refs/wizard/<ref>` (until `forget`)."""
        self._git("update-ref", f"refs/wizard/{ref}", tree)

    def forget(self, refs: Iterable[str]) -> None:
        """Drop refs and the objects only they kept."""
        for ref in refs:
            self._git("update-ref", "-d", f"refs/wizard/{ref}")
        self._git("gc", "--quiet", "--prune=now")

    def changes(self, old: str, new: str) -> list[Change]:
        """Every file path that differs from tree `old` to tree `new`."""
        out = self._git("diff-tree", "-r", "-z", "--no-renames", old, new)
        fields = out.split(b"\0")
        changes = []
        for head, path in zip(fields[0::2], fields[1::2], strict=False):
            if not head.startswith(b":"):
                continue
            old_mode, _, old_blob, _, status = head[1:].decode().split(" ")
            changes.append(
                Change(status, path.decode(errors="surrogateescape"), old_mode, old_blob)
            )
        return changes

    def patch(self, old: str, new: str) -> str:
        """The unified diff from tree `old` to tree `new`."""
        return self._git("diff-tree", "-p", "-r", "--no-color", "--no-renames", old, new).decode(
            errors="replace"
        )

    def folders(self, tree: str) -> set[str]:
        """Every folder in `tree`."""
        found = set()
        for entry in self._git("ls-tree", "-r", "-t", "-z", tree).split(b"\0"):
            meta, _, name = entry.partition(b"\t")
            if meta.split(b" ")[1:2] == [b"tree"]:
                found.add(name.decode(errors="surrogateescape"))
        return found

    def restore(self, changes: list[Change], to: Snapshot) -> list[str]:
        """Put each changed path back as it was in `to`; return the paths, as restored."""
        restored = []
        # Remove what `to` did not have first, so a folder can give way to a file.
        for change in sorted((c for c in changes if c.status == "A"), key=lambda c: c.path):
            target = self.project / change.path
            if target.is_symlink() or target.is_file():
                target.unlink()
            restored.append(f"removed {change.path}")
        self._prune_folders(changes, to.tree)
        for change in sorted((c for c in changes if c.status != "A"), key=lambda c: c.path):
            if change.old_mode == "160000":  # a nested repository: not journaled
                continue
            self._put_back(change, to.modes.get(change.path))
            restored.append(f"restored {change.path}")
        return restored

    def _put_back(self, change: Change, bits: int | None) -> None:
        target = self.project / change.path
        content = self._git("cat-file", "blob", change.old_blob)
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        if change.old_mode == "120000":
            symlink_atomically(target, content.decode(errors="surrogateescape"))
        else:
            write_atomically(target, content, bits or _GIT_MODES.get(change.old_mode, 0o644))

    def _prune_folders(self, changes: list[Change], tree: str) -> None:
        """Remove folders left empty by removing added files, unless `tree` had them."""
        candidates = {
            parent
            for change in changes
            if change.status == "A"
            for parent in Path(change.path).parents
            if str(parent) != "."
        }
        kept: set[str] | None = None
        for folder in sorted(candidates, key=lambda p: len(p.parts), reverse=True):
            path = self.project / folder
            if not path.is_dir() or any(path.iterdir()):
                continue
            kept = self.folders(tree) if kept is None else kept
            if str(folder) not in kept:
                path.rmdir()
