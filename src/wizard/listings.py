"""Dependency and build folders (`node_modules`, `.venv`, ...) as the journal lists them, and a
process that lists a project's ahead of its run.

The journal does not copy these folders: it keeps a listing of each, every file with its
metadata (`list_folder`; why, in `journal.dependencies`). On a large project that listing is
most of the journal's first snapshot (60–100 ms for 18,000 files here, most of it `find`'s,
in a process of its own; 0.15–0.2 s of wizard's own CPU when its walk lists them), and the
run's first model request may wait for that snapshot.

So when the command line says a run is coming (`wizard run`, `wizard skill`), `__main__`
starts `python -I -m wizard.listings PROJECT` before it loads the rest of wizard (after pi's
host, when it starts one: `start_ahead`). That process lists the project's dependency folders
on another core while wizard loads, and prints them (`_main`); the run's journal takes them
for its first snapshot (`take_ahead`) instead of listing them itself, under the run's lock,
and keeps each under its digest. What changed in those folders between the listing and the
snapshot (a second or so, before any of the agent's work) counts as the run's, as anything
the user changes during a run does. A listing for another project, or one that did not end
well, is not taken: the journal lists the folders itself, as before.

That process runs in isolated mode (`-I`: no `PYTHONPATH`, no user site, not the working
folder on its path) from `/`, with nothing of the environment but the locale: nothing of the
project's is imported or read but the metadata it lists. Standard library only (and the
leaf `argv`), so it loads nothing else of wizard.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, TypeVar

from wizard.ahead import Key, Moment, Timeline
from wizard.argv import project_named, run_words

HEAVY_FOLDERS = frozenset(
    {
        "node_modules", ".venv", "venv", "dist", "build", ".next", ".nuxt", "target",
        "__pycache__", ".tox", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".gradle",
        ".turbo", ".cache",
    }
)  # fmt: skip
# Folders a snapshot does not walk into: listed instead, or not journaled.
NOT_WALKED = HEAVY_FOLDERS | {".git"}
_RUNS = frozenset({"run", "skill"})


@dataclass(frozen=True)
class ListingAhead:
    """The process listing a project's dependency folders ahead of its run."""

    process: subprocess.Popen[bytes]
    project: Path


# That process, on the run's timeline until the journal's first snapshot takes it.
LISTED_AHEAD: Key[ListingAhead] = Key("the dependency folders' listing", Moment.PROCESS_START)


class ListingStopped(Exception):
    """A listing given up on: its `stop` said so."""


@dataclass(frozen=True)
class FolderListing:
    """One dependency folder's listing: its path in the project, as the journal keeps it
    (`data`, named by its `digest`), and the repositories found in it."""

    path: str
    digest: str
    data: bytes
    repos: Mapping[str, str]


def list_folder(folder: Path, stop: Callable[[], bool] = lambda: False) -> bytes:
    """Every file, folder and link beneath `folder` (never through a link), each with its
    metadata, as one record (`_FIND_RECORDS`), sorted. `stop`, asked as it goes, gives it up
    (`ListingStopped`). What cannot be listed or looked at (it went away, no permission) is
    passed over.

    GNU `find` lists it (about half the time of wizard's own walk at 18,000 files, and a
    tenth of wizard's CPU: a listing is on the way to the first model request and at the
    close, beside the engine); where there is none, or it failed, the same records come from
    wizard's own walk."""
    records = _found(folder, stop)
    if records is None:
        records = _walked(folder, stop)
    records.sort()
    return b"\0".join(records) + b"\0" if records else b""


# Each record of a listing: an entry's metadata, a tab, its path in the folder. A file's
# metadata is its type (as find's `%y` names it), permissions, size, modification and change
# times (seconds, a point, ten digits: find's `%T@`) and inode; a folder's, its permissions
# alone (its own times say little); a link's, its target, after its length.
_FIND_RECORDS = (
    "(", "-type", "d", "-printf", r"d:%m\t%P\0", ")", "-o",
    "(", "-type", "l", "-printf", r"l\t%P\0", ")", "-o",
    "-printf", r"%y:%m:%s:%T@:%C@:%i\t%P\0",
)  # fmt: skip
# Where `find` is looked for: the system's folders alone. A user's PATH may hold a project's
# `node_modules/.bin` (direnv, npm's scripts), where a package can put a `find` of its own.
_SYSTEM_PATH = "/usr/bin:/bin"
_TYPES = {stat.S_IFREG: "f", stat.S_IFIFO: "p", stat.S_IFSOCK: "s", stat.S_IFCHR: "c",
          stat.S_IFBLK: "b"}  # fmt: skip


T = TypeVar("T")

# Threads whose listings run `find` at the lowest priority (`list_gently`).
_gentle = threading.local()


def list_gently() -> None:
    """From now on, the listings this thread takes run their `find` at the lowest priority.
    The thread itself keeps its own: one reniced while it holds Python's lock would hold up
    every other thread of wizard's for as long as the machine's busier work starves it."""
    _gentle.on = True


def beside(take: Callable[[], T]) -> Callable[[], T]:
    """Call `take` in a thread of its own, whose listings are as gentle as this thread's
    (`list_gently`), while this one goes on; the callable returned waits for its result, or
    raises what it raised."""
    gently = getattr(_gentle, "on", False)
    results: list[T] = []
    errors: list[BaseException] = []

    def run() -> None:
        _gentle.on = gently
        try:
            results.append(take())
        except BaseException as exc:  # raised again to the one who waits
            errors.append(exc)

    thread = threading.Thread(target=run, name="listing-beside", daemon=True)
    thread.start()

    def result() -> T:
        thread.join()
        if errors:
            raise errors[0]
        return results[0]

    return result


def _found(folder: Path, stop: Callable[[], bool]) -> list[bytes] | None:
    """The records GNU `find` prints for `folder` (its links' targets added); None when it
    cannot give them whole: no such program, one without `-printf`, or it failed."""
    # Its output goes to a file of its own, read once it ended: through a pipe, wizard's
    # process would wake for each of find's 4 KB writes, a third of the listing's CPU.
    with _scratch() as output_file:
        try:
            process = subprocess.Popen(
                ["find", "-P", os.fspath(folder), "-mindepth", "1", *_FIND_RECORDS],
                stdin=subprocess.DEVNULL, stdout=output_file, stderr=subprocess.DEVNULL,
                cwd="/", env={"LC_ALL": "C", "PATH": _SYSTEM_PATH},
            )  # fmt: skip
        except OSError:
            return None
        if getattr(_gentle, "on", False):
            with contextlib.suppress(OSError):
                os.setpriority(os.PRIO_PROCESS, process.pid, 19)
        try:
            while True:
                try:
                    process.wait(timeout=0.02)
                    break
                except subprocess.TimeoutExpired:
                    if stop():
                        raise ListingStopped(os.fspath(folder)) from None
        finally:
            if process.returncode is None:
                process.kill()
                process.wait()
        output_file.seek(0)
        output = output_file.read()
    # 1: something could not be looked at (passed over, as the walk does); with nothing
    # printed, maybe a `find` without `-printf`, or a folder it could not open at all.
    if process.returncode != 0 and not (process.returncode == 1 and output):
        return None
    records = output.split(b"\0")
    records.pop()  # after the last record's end
    base = os.fsencode(folder) + b"/"
    if output.startswith(b"l\t") or b"\0l\t" in output:  # a link: its target
        records = [_target(base, record) if record[:2] == b"l\t" else record
                   for record in records]  # fmt: skip
        return [record for record in records if record]
    return records


def _scratch() -> BinaryIO:
    """A file in memory (Linux), else an unnamed temporary one."""
    if hasattr(os, "memfd_create"):
        with contextlib.suppress(OSError):
            return open(os.memfd_create("wizard-listing", os.MFD_CLOEXEC), "w+b")
    return tempfile.TemporaryFile()


def _target(base: bytes, record: bytes) -> bytes:
    """A link's record, with its target ("" if it went away)."""
    path = record[2:]
    try:
        return _link(os.readlink(base + path), path)
    except OSError:
        return b""


def _walked(folder: Path, stop: Callable[[], bool]) -> list[bytes]:
    """The records of `folder`, from wizard's own walk."""
    records: list[bytes] = []
    texts: dict[int, bytes | None] = {}  # each mode's metadata, or None for one with times
    root = os.fsencode(folder)
    stack = [b""]
    while stack:
        relative = stack.pop()
        if stop():
            raise ListingStopped(os.fsdecode(root))
        try:
            with os.scandir(root + b"/" + relative if relative else root) as found:
                items = list(found)
        except OSError:
            continue
        head = relative + b"/" if relative else b""
        for item in items:
            try:
                info = item.stat(follow_symlinks=False)
            except OSError:
                continue
            path = head + item.name
            mode = info.st_mode
            if mode not in texts:
                bits = f"{stat.S_IMODE(mode):o}"
                texts[mode] = (f"d:{bits}\t".encode() if stat.S_ISDIR(mode)
                               else None if not stat.S_ISLNK(mode)
                               else b"")  # fmt: skip
            text = texts[mode]
            if text is None:
                kind = _TYPES.get(stat.S_IFMT(mode), "U")
                records.append(
                    f"{kind}:{stat.S_IMODE(mode):o}:{info.st_size}:{_seconds(info.st_mtime_ns)}:"
                    f"{_seconds(info.st_ctime_ns)}:{info.st_ino}\t".encode()
                    + path
                )
            elif text:  # a folder
                records.append(text + path)
                stack.append(path)
            else:
                with contextlib.suppress(OSError):
                    records.append(_link(os.readlink(item.path), path))
    return records


def _seconds(nanoseconds: int) -> str:
    """A time as find's `%T@` prints it: whole seconds (rounded down), then the rest."""
    whole, rest = divmod(nanoseconds, 1_000_000_000)
    return f"{whole}.{rest:09d}0"


def _link(target: bytes, path: bytes) -> bytes:
    return b"l:%d:%s\t%s" % (len(target), target, path)


def read_listing(data: bytes) -> dict[str, str]:
    """A listing's entries: each path in its folder, and its metadata."""
    entries: dict[str, str] = {}
    for record in data.split(b"\0")[:-1]:
        if record.startswith(b"l:"):
            size, _, rest = record[2:].partition(b":")
            cut = int(size)
            meta, path = b"l:" + rest[:cut], rest[cut + 1 :]
        else:
            meta, _, path = record.partition(b"\t")
        entries[os.fsdecode(path)] = os.fsdecode(meta)
    return entries


def from_json(text: str) -> str:
    """An entry's metadata as a listing of JSON said it (kept by a wizard before listings
    were `find`'s: a file's type and permissions in octal around its size, times in
    nanoseconds and inode), as a listing says it now (`ValueError` if it is neither)."""
    if text.startswith(("d:", "l:")):
        return text
    kind, size, modified, changed, inode, bits = text.split(":")
    mode = int(kind, 8)
    return (f"{_TYPES.get(stat.S_IFMT(mode), 'U')}:{bits}:{int(size)}:{_seconds(int(modified))}:"
            f"{_seconds(int(changed))}:{int(inode)}")  # fmt: skip


def _repositories(data: bytes) -> Iterator[bytes]:
    """The path of each folder named `.git` in a listing's `data`."""
    at = data.find(b".git\0")
    while at != -1:
        start = data.rfind(b"\0", 0, at) + 1
        meta, _, path = data[start : at + 4].partition(b"\t")
        if meta.startswith(b"d:") and (path == b".git" or path.endswith(b"/.git")):
            yield path
        at = data.find(b".git\0", at + 5)


def _bare_repositories(data: bytes) -> Iterator[bytes]:
    """The path of each folder in a listing's `data` that is a repository by what it holds
    (`walk.is_repository`): a `HEAD`, and `objects` and `refs` folders beside it."""
    at = data.find(b"/HEAD\0")
    while at != -1:
        start = data.rfind(b"\0", 0, at) + 1
        meta, _, path = data[start : at + 5].partition(b"\t")
        folder = path[: -len(b"/HEAD")]
        if not meta.startswith(b"d:") and all(
            re.search(rb"(?:^|\0)d:[^\t\0]*\t" + re.escape(folder + part) + rb"\0", data)
            for part in (b"/objects", b"/refs")
        ):
            yield folder
        at = data.find(b"/HEAD\0", at + 6)


def heavy_folders(root: Path) -> Iterator[str]:
    """Each dependency or build folder beneath `root`, as a snapshot finds it (never inside
    another, nor inside a `.git`, never through a link). Only folders are looked at: each
    entry's type is the one its folder's listing gives (a `stat` only where it gives none)."""
    stack = [""]
    while stack:
        relative = stack.pop()
        try:
            with os.scandir(root / relative) as found:
                folders = [item.name for item in found if _is_folder(item)]
        except OSError:
            continue
        for name in folders:
            path = f"{relative}/{name}" if relative else name
            if name in HEAVY_FOLDERS:
                yield path
            elif name != ".git":
                stack.append(path)


def _is_folder(item: os.DirEntry[str]) -> bool:
    try:
        return item.is_dir(follow_symlinks=False)
    except OSError:
        return False


def folder_listing(
    folder: Path, path: str, stop: Callable[[], bool] = lambda: False
) -> FolderListing:
    """The listing of `folder`, the project's folder at `path`, and the repositories in it."""
    data = list_folder(folder, stop)
    repos = {f"{path}/{os.fsdecode(found)}": "folder" for found in _repositories(data)}
    repos |= {f"{path}/{os.fsdecode(found)}": "bare" for found in _bare_repositories(data)}
    return FolderListing(path, digest_of(data), data, repos)


def digest_of(data: bytes) -> str:
    """The name a listing is kept under."""
    return hashlib.sha1(data, usedforsecurity=False).hexdigest()


def start_ahead(argv: Sequence[str], ahead: Timeline) -> int | None:
    """List the project's dependency folders in a process of its own, on `ahead`
    (`LISTED_AHEAD`), if this command line runs a program or a skill on a project
    (`take_ahead`); its process id."""
    words = run_words(argv, _RUNS)
    if words is None or len(words) < 2 or ahead.has(LISTED_AHEAD):
        return None
    try:
        project = project_named(argv).resolve(strict=True)
        process = subprocess.Popen(
            [sys.executable, "-I", "-m", "wizard.listings", str(project)],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            cwd="/", env=_locale(),
        )  # fmt: skip
    except (OSError, RuntimeError):  # no such folder (the run says so), or no process
        return None
    ahead.start(LISTED_AHEAD, ListingAhead(process, project), _discarded)
    return process.pid


def _locale() -> dict[str, str]:
    """The listing process's environment: the locale alone, which decides how a file's name
    is decoded (as in wizard's own process, so a listing reads the same either way)."""
    return {key: value for key, value in os.environ.items()
            if key == "LANG" or key.startswith("LC_")}  # fmt: skip


def take_ahead(ahead: Timeline, project: Path) -> list[FolderListing] | None:
    """The listings of `project`'s dependency folders taken ahead (off `ahead`), once that
    process has ended (waited for); None if none were taken for it, or they cannot be
    trusted whole (the process failed, or printed what is not a whole listing)."""
    taken = ahead.take(LISTED_AHEAD)
    if taken is None:
        return None
    if taken.project != project:
        _discarded(taken)
        return None
    process = taken.process
    try:
        output, _ = process.communicate()
    except BaseException:  # a Ctrl-C while it lists
        _discarded(taken)
        raise
    if process.returncode != 0:
        return None
    try:
        return list(_read(output))
    except (ValueError, KeyError, TypeError):
        return None


def _discarded(taken: ListingAhead) -> None:
    """End a listing process no run took (before the run's sweep of what it left running,
    which would count it as the agent's, and at exit)."""
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        taken.process.kill()
        taken.process.communicate(timeout=5)


def _read(output: bytes) -> Iterator[FolderListing]:
    """The listings the process printed: for each, a line of JSON (its path, digest, size and
    repositories), then its data; `ValueError` for anything else."""
    at = 0
    while at < len(output):
        end = output.index(b"\n", at)
        head = json.loads(output[at:end])
        path, digest, size, repos = head["path"], head["digest"], head["size"], head["repos"]
        data = output[end + 1 : end + 1 + size]
        if len(data) != size or digest_of(data) != digest or not isinstance(path, str):
            raise ValueError(f"a listing that is not whole: {path!r}")
        if not isinstance(repos, dict) or not all(
            isinstance(name, str) for name in (*repos, *repos.values())
        ):
            raise ValueError(f"a listing's repositories are not names: {path!r}")
        yield FolderListing(path, digest, data, repos)
        at = end + 1 + size


def _main(project: Path) -> None:
    """List `project`'s dependency folders, then print them (`_read`): all are listed before
    the first byte is written, so the listing never waits on a reader."""
    listings = [folder_listing(project / path, path) for path in heavy_folders(project)]
    out = sys.stdout.buffer
    for listing in listings:
        head = {"path": listing.path, "digest": listing.digest, "size": len(listing.data),
                "repos": dict(listing.repos)}  # fmt: skip
        out.write(json.dumps(head).encode() + b"\n" + listing.data)
    out.flush()


if __name__ == "__main__":
    _main(Path(sys.argv[1]))
