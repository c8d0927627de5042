"""Snapshots of a project's files in a private git object store, and restoring them.

Git's object store is the engine: deduplicated and compact. All of it lives in wizard's state
folder (`<state>/journal.git`, a bare store), so the user's repository, index, stash and refs
are never touched, and nothing is written into the project.

**Git never looks at the project.** The project is the agent's, and a repository's config
runs code (`core.fsmonitor`, hooks, filters from `.gitattributes`). So wizard walks the
project itself, without following a link, and gives each new file's content to git on its
input (`git fast-import`, one pack per snapshot); git only stores that, builds trees from a
list (`update-index --index-info` into a private index, `write-tree`) and reads the store
back (`diff-tree`, `cat-file`, `ls-tree`).
Every git command runs in the state folder with a minimal environment (no `GIT_*`, no key of
wizard's), no global or system config, and `core.fsmonitor`, hooks and protocols off.

Nested repositories and submodules are plain folders here: their files are snapshotted byte
for byte, their `.git` left out like the project's own. The user's `.gitignore` does not
apply (`.env` is journaled too); the big dependency and build folders in `HEAVY_FOLDERS` are
fingerprinted, not copied, and so is every file over `WIZARD_JOURNAL_MAX_FILE` bytes (50 MB):
an outro can say the run changed them, and that undo cannot bring them back. Pipes, sockets
and devices are not files and are left out.

Git stores a file's content, whether it is executable, and symlinks. The exact permission
bits of files that differ from git's two modes are kept beside each snapshot; setuid, setgid
and sticky bits are never written back (`PLAIN_BITS`). A stat cache
(size, times, inode) lets a snapshot rehash only the files that changed.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import posixpath
import shutil
import stat
import subprocess
import tarfile
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path, PurePosixPath
from typing import TypeVar

from wizard.atomic import DurableBatch, make_durable, symlink_atomically, write_atomically
from wizard.config import number_setting
from wizard.errors import ConfigError
from wizard.journal.dependencies import keep_listing
from wizard.listings import (
    HEAVY_FOLDERS,
    NOT_WALKED,
    FolderListing,
    ListingStopped,
    folder_listing,
    heavy_folders,
)
from wizard.own_git import own_git_env
from wizard.walk import walk

_GIT_MODES = {"100644": 0o644, "100755": 0o755}
# A snapshot's new blobs, packed as they come (`_BlobPack`): compressed as the loose objects
# were (level 1), the end of the input marked (`done`, so a cut input keeps nothing).
_IMPORT = ("-c", "pack.compression=1", "fast-import", "--quiet", "--done")
# A snapshot's new blobs written loose, each a file, at most (held until the snapshot's walk
# ends): past this many, or bytes, packed.
_LOOSE, _HELD = 32, 8_000_000
# The permission bits wizard writes into a project: never setuid, setgid or sticky, which a
# command of the agent can set on a file and an apply (or the undo of an undo) would then
# write as wizard, root included.
PLAIN_BITS = 0o777
DEFAULT_MAX_FILE = 50_000_000
_GIT_SETTINGS = (
    "core.autocrlf=false", "core.fileMode=true", "core.symlinks=true", "core.fsmonitor=false",
    "core.hooksPath=/dev/null", "core.untrackedCache=false", "protocol.allow=never",
    "gc.auto=0", "maintenance.auto=false",
)  # fmt: skip


@dataclass(frozen=True)
class Snapshot:
    """A project's files at one moment: a git tree, odd permission bits, heavy folders."""

    tree: str
    modes: dict[str, int] = field(default_factory=dict)
    # Dependency and build folders: folder → the digest of its files' metadata listing.
    heavy: dict[str, str] = field(default_factory=dict)
    # Files over the size limit, fingerprinted ("size:mtime_ns"), not stored.
    large: dict[str, str] = field(default_factory=dict)
    # Every `.git` (git will not store one): a folder ("folder"), or a gitfile, the pointer
    # of a submodule or worktree, with its content ("gitfile:..."), or a link ("link:...");
    # and every folder that is a repository by what it holds, whatever its name ("bare").
    repos: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class _Entry:
    """One file or link of the project as the walk found it."""

    path: str
    mode: str  # git's: 100644, 100755 or 120000
    info: os.stat_result


@dataclass(frozen=True)
class Change:
    """One path that differs between two snapshots, and what it was in the first."""

    status: str  # A: only in the second; D: only in the first; M/T: in both, different
    path: str
    old_mode: str
    old_blob: str


# The packs a store holds before a prune packs them into one (each snapshot that stored new
# blobs made one).
_PACKS = 16
# The last snapshot's index listing (its digest) and the tree written for it.
_LAST_TREE = "last-tree"
# A heavy folder's listing, by its path: its digest, and the repositories found in it.
Listed = Mapping[str, tuple[str, Mapping[str, str]]]
# Listings given to a snapshot, or a way to get them once its walk of the rest is done (they
# may still be being taken meanwhile).
Given = Listed | Callable[[], Listed]

_V = TypeVar("_V")


@dataclass
class Walked:
    """A walk of the project's files (`GitStore.walk`), their new contents stored, no tree
    written yet: each file's index line (`mode blob`) and stat-cache entry by path, and what a
    snapshot keeps beside its tree. `left_out`: the root's names it did not walk."""

    lines: dict[str, str] = field(default_factory=dict)
    stats: dict[str, str] = field(default_factory=dict)
    modes: dict[str, int] = field(default_factory=dict)
    large: dict[str, str] = field(default_factory=dict)
    heavy: dict[str, str] = field(default_factory=dict)
    repos: dict[str, str] = field(default_factory=dict)
    left_out: frozenset[str] = frozenset()

    def without(self, names: frozenset[str]) -> Walked:
        """This walk as if it had left the root's `names` out."""

        def kept(part: dict[str, _V]) -> dict[str, _V]:
            return {path: v for path, v in part.items() if path.split("/", 1)[0] not in names}

        return Walked(kept(self.lines), kept(self.stats), kept(self.modes), kept(self.large),
                      kept(self.heavy), kept(self.repos), self.left_out | names)  # fmt: skip

    def joined(self, rest: Walked) -> Walked:
        """This walk with `rest`, a walk of what it left out."""
        return Walked(self.lines | rest.lines, self.stats | rest.stats, self.modes | rest.modes,
                      self.large | rest.large, self.heavy | rest.heavy,
                      self.repos | rest.repos)  # fmt: skip

    def listing(self) -> bytes:
        """Its index listing, as `git update-index -z --index-info` reads it, by path."""
        lines = (f"{self.lines[path]}\t{path}\0" for path in sorted(self.lines))
        return "".join(lines).encode(errors="surrogateescape")


# The stat caches: of the project's snapshots, and of a preview's copy's.
_CACHES = ("stat-cache", "preview-stat-cache")


def _cache_name(copy: Path | None) -> str:
    """The stat cache of the project's snapshots, or of a preview's copy's."""
    return _CACHES[copy is not None]


# A stat cache's first line (`GitStore._load_cache`): JSON took 12–18 ms to write at 10,000
# files, most of a closing snapshot taken ahead.
_CACHE_FORMAT = b"wizard stat cache 1\n"


def _older_cache(path: Path) -> dict[str, str]:
    """A stat cache an older wizard kept, as JSON; empty if there is none, or not one."""
    try:
        loaded = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return {
        path: entry if isinstance(entry, str) else ":".join(map(str, entry))
        for path, entry in (loaded.items() if isinstance(loaded, dict) else ())
        if isinstance(entry, str) or (isinstance(entry, list) and len(entry) == 5)
    }


def _repository(path: Path, info: os.stat_result) -> str:
    """What a `.git` is: a folder, a gitfile and what it points to, or a link."""
    if stat.S_ISDIR(info.st_mode):
        return "folder"
    try:
        if stat.S_ISLNK(info.st_mode):
            return "link:" + os.readlink(path)
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(descriptor, "rb") as handle:
            return "gitfile:" + handle.read(4096).decode(errors="surrogateescape")
    except OSError as exc:
        return f"unreadable:{exc.errno}"


class _BlobPack:
    """The new blobs of one snapshot, made durable when the block ends, before the tree that
    names them is written; an error in the block keeps none of them.

    A few (up to `_LOOSE`, `_HELD` bytes) are written loose, each a file (`DurableBatch`):
    a close that changed a handful of files pays no process. Past that, all go to `git
    fast-import` as the snapshot gives them (their content, on its input: git opens no file
    of the project), which writes them as one pack; a blob the store already packed is not
    packed again (git's import skips it). A project's first snapshot made 2,000 files and
    renamed each into place (1.2 s of CPU at 2,000 small files here, beside the engine's
    start); the import takes a tenth of that, in a process of its own."""

    def __init__(self, store: GitStore) -> None:
        self._store = store
        self._few: dict[str, bytes] = {}  # the blobs given, until the import starts
        self._held = 0  # their bytes
        self._given: set[str] = set()
        self._import: subprocess.Popen[bytes] | None = None
        self._packs = store.git_dir / "objects" / "pack"
        self._had: set[str] = set()

    def __enter__(self) -> _BlobPack:
        return self

    def add(self, blob: str, content: bytes) -> None:
        """Store `content`, whose blob is `blob` (once, however often given)."""
        if blob in self._given or blob in self._few:
            return
        if self._import is None:
            if len(self._few) < _LOOSE and self._held + len(content) <= _HELD:
                self._few[blob] = content
                self._held += len(content)
                return
            self._start()
        self._send(blob, content)

    def _start(self) -> None:
        self._had = set(os.listdir(self._packs)) if self._packs.is_dir() else set()
        command, env = self._store._command(_IMPORT)
        self._import = subprocess.Popen(command, env=env, cwd=self._store.state,
                                        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE)  # fmt: skip
        few, self._few = self._few, {}
        for blob, content in few.items():
            self._send(blob, content)

    def _send(self, blob: str, content: bytes) -> None:
        assert self._import is not None and self._import.stdin is not None
        try:
            self._import.stdin.write(b"blob\ndata %d\n" % len(content))
            self._import.stdin.write(content)
            self._import.stdin.write(b"\n")
        except BrokenPipeError:  # the import failed: in its own words
            self._import.kill()
            raise self._failed(self._ended()) from None
        self._given.add(blob)

    def _ended(self) -> bytes:
        """What the import said, once it ended."""
        assert self._import is not None and self._import.stderr is not None
        said = self._import.stderr.read()
        self._import.wait()
        return said

    def _failed(self, said: bytes) -> ConfigError:
        for report in self._store.git_dir.glob("fast_import_crash_*"):  # what git wrote there
            report.unlink(missing_ok=True)
        return self._store._failed(_IMPORT, said)

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        if self._import is None:
            if kind is None and self._few:
                self._write_loose()
            return
        assert self._import.stdin is not None
        if kind is not None:  # no `done`: the import keeps nothing (its temp pack goes too)
            self._import.kill()
            self._ended()
            with contextlib.suppress(FileNotFoundError):
                for name in set(os.listdir(self._packs)) - self._had:
                    (self._packs / name).unlink(missing_ok=True)
            return
        with contextlib.suppress(BrokenPipeError):  # it failed: its own words follow
            self._import.stdin.write(b"done\n")
            self._import.stdin.close()
        said = self._ended()
        if self._import.returncode != 0:
            raise self._failed(said)
        # Under a hundred blobs, git stores them loose (its `fastimport.unpackLimit`).
        new = sorted(set(os.listdir(self._packs)) - self._had)
        loose = (self._store.loose(blob) for blob in self._given)
        packs = (self._packs / name for name in new)
        make_durable(self._store.git_dir, chain(packs, (path for path in loose if path.exists())))

    def _write_loose(self) -> None:
        with DurableBatch(self._store.git_dir) as batch:
            for blob, content in self._few.items():
                target = self._store.loose(blob)
                target.parent.mkdir(exist_ok=True)
                data = b"blob %d\0" % len(content) + content
                batch.add(target, zlib.compress(data, 1), 0o444)


def git_available() -> bool:
    """Whether the journal's engine, git, is installed."""
    return shutil.which("git") is not None


class GitStore:
    """The journal's object store for one project."""

    def __init__(self, project: Path, state: Path) -> None:
        self.project = project
        self.state = state
        self.git_dir = state / "journal.git"
        # The stat caches as this store last read or wrote them: a run's closing snapshot
        # finds its first snapshot's without reading it again.
        self._caches: dict[str, dict[str, str]] = {}
        # The last snapshot's walk (a run's first snapshot's stands for its closing one when
        # nothing of the run's ran).
        self.last_walk: Walked | None = None

    def _git(self, *args: str, store: bool = True, stdin: bytes | None = None) -> bytes:
        command, env = self._command(args, store)
        done = subprocess.run(
            command, env=env, cwd=self.state, input=stdin, capture_output=True, check=False
        )
        if done.returncode != 0:
            raise self._failed(args, done.stderr)
        return done.stdout

    def _command(self, args: Iterable[str], store: bool = True) -> tuple[list[str], dict[str, str]]:
        """A git command of the journal's, and its environment."""
        env = own_git_env()
        if store:
            env |= {"GIT_DIR": str(self.git_dir), "GIT_INDEX_FILE": str(self.state / "index")}
        return ["git", *(arg for s in _GIT_SETTINGS for arg in ("-c", s)), *args], env

    def _failed(self, args: tuple[str, ...], stderr: bytes) -> ConfigError:
        return ConfigError(
            f"The run journal's git failed: git {' '.join(args[:2])}: "
            f"{stderr.decode(errors='replace').strip()}",
            f"Its store is {self.git_dir}; remove it to start the journal afresh.",
        )

    def _ensure(self) -> None:
        if not (self.git_dir / "HEAD").exists():
            self.state.mkdir(parents=True, exist_ok=True)
            self._git("init", "--quiet", "--bare", str(self.git_dir), store=False)

    def snapshot(
        self,
        copy: Path | None = None,
        mounts: Iterable[str] = (),
        listed: Given | None = None,
        ahead: Walked | None = None,
    ) -> Snapshot:
        """Record the project's files now (or a preview's `copy` of them, whose `mounts`, the
        links it holds in place of heavy folders, count as those folders). A heavy folder in
        `listed` (`heavy_listings`, taken since, when nothing could change it; asked for once
        the rest is walked) is not listed again. `ahead`: the project's walk, taken since
        when nothing could change it, but for the root's names it left out, walked now."""
        if ahead is None:
            walked = self.walk(copy, mounts, listed)
        else:
            walked = ahead.joined(self.walk(only=ahead.left_out))
        tree = self._tree(walked.listing())
        cache_name = _cache_name(copy)
        if walked.stats != self._load_cache(cache_name):  # the same stats: nothing to write
            self._save_cache(cache_name, walked.stats)
        self.last_walk = walked
        return Snapshot(tree, walked.modes, walked.heavy, walked.large, walked.repos)

    def walk(
        self,
        copy: Path | None = None,
        mounts: Iterable[str] = (),
        listed: Given | None = None,
        *,
        leave: frozenset[str] = frozenset(),
        only: frozenset[str] | None = None,
        stop: Callable[[], bool] = lambda: False,
    ) -> Walked:
        """The project's files now (`snapshot`), each new content stored, no tree written:
        but for the root's names in `leave`, or only those in `only`. `ListingStopped` once
        `stop` says so."""
        self._ensure()
        limit = number_setting(os.environ, "WIZARD_JOURNAL_MAX_FILE", DEFAULT_MAX_FILE, int)
        root = copy or self.project
        cache = self._load_cache(_cache_name(copy))
        walked = Walked(left_out=leave)
        top = (lambda name: name not in leave) if only is None else only.__contains__
        entries = self._entries(root, walked, frozenset(mounts), listed or {}, top)
        # New blobs go into one pack, durable before the tree that names them is written.
        with _BlobPack(self) as blobs:
            for count, entry in enumerate(entries):
                if count % 512 == 0 and stop():
                    raise ListingStopped(str(root))
                info = entry.info
                if entry.mode != "120000" and info.st_size > limit:
                    walked.large[entry.path] = f"{info.st_size}:{info.st_mtime_ns}"
                    continue
                key = f"{info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}:{info.st_ino}:"
                cached = cache.get(entry.path)
                blob = (
                    cached[len(key) :]
                    if cached is not None and cached.startswith(key)
                    else self._store(root, entry, blobs)
                )
                walked.stats[entry.path] = key + blob
                walked.lines[entry.path] = f"{entry.mode} {blob}"
                bits = stat.S_IMODE(info.st_mode)
                if entry.mode != "120000" and bits != (0o755 if bits & 0o100 else 0o644):
                    walked.modes[entry.path] = bits
        return walked

    def _entries(
        self,
        root: Path,
        walked: Walked,
        mounts: frozenset[str],
        listed: Given,
        top: Callable[[str], bool],
    ) -> Iterator[_Entry]:
        """Every file and link beneath `root` (of its own names, those `top` takes), through
        no followed link, nothing that is not a file or a link. A `.git` goes into the
        walk's `repos`, not the tree. Heavy folders (and `mounts`, the folders they stand
        for) go into its `heavy`, by their listing's digest, once the rest is walked (a
        listing being taken meanwhile is waited for then)."""
        heavy, repos = walked.heavy, walked.repos
        met: list[str] = []

        def bare(path: str) -> None:
            repos[path] = "bare"

        for path, name, info in walk(root, lambda name: name not in NOT_WALKED, top, bare):
            if name == ".git" and path in mounts:  # a preview's link to the project's own
                with contextlib.suppress(OSError):
                    target = Path(os.path.realpath(root / path))
                    repos[path] = _repository(target, target.lstat())
            elif name == ".git":
                repos[path] = _repository(root / path, info)
            elif stat.S_ISDIR(info.st_mode):
                if name in HEAVY_FOLDERS:
                    met.append(path)
            elif path in mounts:
                with contextlib.suppress(OSError):
                    target = Path(os.path.realpath(root / path))
                    heavy[path] = self._fingerprint(target, repos, path)
            elif stat.S_ISLNK(info.st_mode):
                yield _Entry(path, "120000", info)
            elif stat.S_ISREG(info.st_mode):
                yield _Entry(path, "100755" if info.st_mode & 0o100 else "100644", info)
        given = listed() if callable(listed) else listed
        for path in met:
            if path in given:
                heavy[path], found = given[path]
                repos.update(found)
            else:
                heavy[path] = self._fingerprint(root / path, repos, path)

    def _tree(self, listing: bytes) -> str:
        """The tree of an index listing: the last snapshot's, when its listing was this one
        (a tree is its listing's, and no prune took it: `forget` drops the note), else
        written now."""
        digest = hashlib.sha1(listing, usedforsecurity=False).hexdigest()
        note = self.state / _LAST_TREE
        with contextlib.suppress(OSError, ValueError):
            last, tree = note.read_text().split()
            if last == digest:
                return tree
        (self.state / "index").unlink(missing_ok=True)
        self._git("update-index", "-z", "--index-info", stdin=listing)
        tree = self._git("write-tree").decode().strip()
        write_atomically(note, f"{digest} {tree}\n".encode(), 0o600)
        return tree

    def heavy_listings(self, stop: Callable[[], bool] = lambda: False) -> Listed:
        """Each heavy folder of the project now, as a snapshot lists it: its listing's digest,
        and the repositories found in it (`ListingStopped` once `stop` says so)."""
        return self.kept(
            folder_listing(self.project / path, path, stop) for path in heavy_folders(self.project)
        )

    def kept(self, listings: Iterable[FolderListing]) -> Listed:
        """Heavy folders' listings, kept in the journal's state, as a snapshot takes them."""
        return {listing.path: (keep_listing(self.state, listing), listing.repos)
                for listing in listings}  # fmt: skip

    def _fingerprint(self, folder: Path, repos: dict[str, str], path: str) -> str:
        listing = folder_listing(folder, path)
        repos.update(listing.repos)
        return keep_listing(self.state, listing)

    def _store(self, root: Path, entry: _Entry, blobs: _BlobPack) -> str:
        """Give the entry's content to `blobs` (if the store does not hold it loose); its
        blob's id."""
        absolute = root / entry.path
        if entry.mode == "120000":
            content = os.fsencode(os.readlink(absolute))
        else:
            descriptor = os.open(absolute, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            with os.fdopen(descriptor, "rb") as handle:
                content = handle.read()
        hashed = hashlib.sha1(b"blob %d\0" % len(content), usedforsecurity=False)
        hashed.update(content)
        blob = hashed.hexdigest()
        if not self.loose(blob).exists():
            blobs.add(blob, content)
        return blob

    def loose(self, blob: str) -> Path:
        """Where `blob` is, if the store holds it loose."""
        return self.git_dir / "objects" / blob[:2] / blob[2:]

    def cached(self) -> bool:
        """Whether a snapshot of the project left its stat cache (then the next reads only
        what changed since; without one it reads and stores every file)."""
        name = _cache_name(None)
        return (self.state / name).exists() or (self.state / f"{name}.json").exists()

    def _load_cache(self, name: str) -> Mapping[str, str]:
        """A stat cache: each file's path, and its size, modification and change times
        (nanoseconds) and inode, then its blob, as one text (`size:mtime:ctime:inode:blob`),
        each path and text ended by a NUL after a first line (`_CACHE_FORMAT`); one an older
        wizard kept (`<name>.json`: the same as JSON, or each entry a list) is read alike."""
        if name in self._caches:
            return self._caches[name]
        try:
            data = (self.state / name).read_bytes()
        except OSError:
            data = b""
        if data.startswith(_CACHE_FORMAT):
            fields = data[len(_CACHE_FORMAT) :].split(b"\0")
            paths = (os.fsdecode(path) for path in fields[0:-1:2])
            entries = (entry.decode(errors="replace") for entry in fields[1::2])
            cache = dict(zip(paths, entries, strict=False))
        else:
            cache = _older_cache(self.state / f"{name}.json")
        self._caches[name] = cache
        return cache

    def _save_cache(self, name: str, cache: dict[str, str]) -> None:
        fields = (f"{path}\0{entry}\0" for path, entry in cache.items())
        data = _CACHE_FORMAT + "".join(fields).encode(errors="surrogateescape")
        write_atomically(self.state / name, data, 0o600)
        (self.state / f"{name}.json").unlink(missing_ok=True)
        self._caches[name] = cache

    def keep(self, ref: str, tree: str) -> None:
        """Keep `tree` alive under `refs/wizard/<ref>` (until `forget`)."""
        self._git("update-ref", f"refs/wizard/{ref}", tree)

    def forget(self, refs: Iterable[str]) -> None:
        """Drop refs and the objects only they kept. Unreachable loose objects go now; the
        snapshots' packs (`_BlobPack`) are packed into one, without what no ref holds any
        more, once there are more than `_PACKS` (so a prune costs little run after run, and
        the store does not keep every blob it was ever given); the stat caches keep every
        entry whose blob is still stored (a snapshot after a prune rehashes only what the
        collection took)."""
        (self.state / _LAST_TREE).unlink(missing_ok=True)
        for ref in refs:
            self._git("update-ref", "-d", f"refs/wizard/{ref}")
        if len(list((self.git_dir / "objects" / "pack").glob("pack-*.pack"))) > _PACKS:
            # What no ref holds comes out loose (-A), for the prune below: as stored, no
            # deltas searched for (a prune runs at a run's close).
            self._git("repack", "-a", "-d", "-A", "-q", "--window=0")
        self._git("prune", "--expire=now")
        for name in _CACHES:
            self._keep_stored(name)

    def _keep_stored(self, cache_name: str) -> None:
        """Drop the entries of a stat cache whose blob the store no longer holds."""
        cache = self._load_cache(cache_name)
        if not cache:
            return
        blobs = sorted({entry.rpartition(":")[2] for entry in cache.values()})
        answer = self._git("cat-file", "--batch-check=%(objectname)",
                           stdin="\n".join(blobs).encode() + b"\n")  # fmt: skip
        missing = {line.split()[0] for line in answer.decode().splitlines() if "missing" in line}
        if missing:
            kept = {path: entry for path, entry in cache.items()
                    if entry.rpartition(":")[2] not in missing}  # fmt: skip
            self._save_cache(cache_name, kept)

    def changes(self, old: str, new: str) -> list[Change]:
        """Every file path that differs from tree `old` to tree `new`."""
        if old == new:
            return []
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

    def blobs(self, names: Iterable[str]) -> dict[str, bytes]:
        """The content of each blob named (one `git cat-file --batch` for all of them)."""
        wanted = list(dict.fromkeys(names))
        if not wanted:
            return {}
        out = self._git("cat-file", "--batch", stdin="".join(f"{n}\n" for n in wanted).encode())
        found, at = {}, 0
        for name in wanted:
            end = out.index(b"\n", at)
            header = out[at:end].split()
            at = end + 1
            if len(header) < 3 or header[1] != b"blob":  # missing: "<name> missing"
                continue
            size = int(header[2])
            found[name] = out[at : at + size]
            at += size + 1
        return found

    def patch(self, old: str, new: str, paths: list[str] | None = None) -> str:
        """The unified diff from tree `old` to tree `new` (of only `paths`, when given)."""
        options = ("-p", "-r", "--binary", "--no-color", "--no-renames", "--no-textconv",
                   "--no-ext-diff")  # fmt: skip
        only = ("--", *paths) if paths is not None else ()
        out = self._git("--literal-pathspecs", "diff-tree", *options, old, new, *only)
        return out.decode(errors="surrogateescape")

    def stat(self, old: str, new: str) -> str:
        """The summary of the changes from tree `old` to tree `new` (`git diff --stat`)."""
        options = ("--stat", "-r", "--no-color", "--no-renames")
        return self._git("diff-tree", *options, old, new).decode(errors="surrogateescape")

    def line_counts(self, old: str, new: str) -> dict[str, tuple[int, int] | None]:
        """Lines added and removed per path from tree `old` to `new`, as git counts them
        (bytes split at LF, whatever the encoding); None for a binary file."""
        out = self._git("diff-tree", "-r", "-z", "--numstat", "--no-renames", old, new)
        counts: dict[str, tuple[int, int] | None] = {}
        for record in out.split(b"\0"):
            added, _, rest = record.partition(b"\t")
            removed, _, path = rest.partition(b"\t")
            if not path:
                continue
            name = path.decode(errors="surrogateescape")
            binary = added == b"-" or removed == b"-"
            counts[name] = None if binary else (int(added), int(removed))
        return counts

    def export(self, tree: str, dest: Path, leave_out: Callable[[str], bool]) -> None:
        """Write the files of `tree` into the folder `dest` (which must be empty), but those
        whose name `leave_out` says: the project as a snapshot held it, for a check to run on.
        Links and modes come back as stored; nothing in the archive may land outside `dest`
        (tarfile's data filter)."""
        archive = self._git("archive", "--format=tar", tree)
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            members = [m for m in tar.getmembers() if not leave_out(PurePosixPath(m.name).name)]
            tar.extractall(dest, members=members, filter="data")

    def links_out(self, tree: str) -> dict[str, str]:
        """The links in `tree` whose target leaves the project (absolute, or climbing past
        its root): path → target."""
        found = {}
        for entry in self._git("ls-tree", "-r", "-z", tree).split(b"\0"):
            meta, _, name = entry.partition(b"\t")
            fields = meta.split(b" ")
            if len(fields) != 3 or fields[0] != b"120000":
                continue
            path = name.decode(errors="surrogateescape")
            target = self._git("cat-file", "blob", fields[2].decode()).decode(
                errors="surrogateescape"
            )
            inside = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
            if target.startswith("/") or inside == ".." or inside.startswith("../"):
                found[path] = target
        return found

    def folders(self, tree: str) -> set[str]:
        """Every folder in `tree`."""
        found = set()
        for entry in self._git("ls-tree", "-r", "-t", "-z", tree).split(b"\0"):
            meta, _, name = entry.partition(b"\t")
            if meta.split(b" ")[1:2] == [b"tree"]:
                found.add(name.decode(errors="surrogateescape"))
        return found

    def restore(self, changes: list[Change], to: Snapshot, verb: str = "restored") -> list[str]:
        """Put each changed path back as it was in `to`; return the paths, as restored
        (`verb` names what was done to one)."""
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
            restored.append(f"{verb} {change.path}")
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
            mode = bits or _GIT_MODES.get(change.old_mode, 0o644)
            write_atomically(target, content, mode & PLAIN_BITS)

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
