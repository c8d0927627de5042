"""Dependency and build folders (`node_modules`, `.venv`, ...) as the journal lists them, and a
process that lists a project's ahead of its run.

The journal does not copy these folders: it keeps a listing of each, every file with its
metadata (`fingerprint_folder`; why, in `journal.dependencies`). On a large project that
listing is most of the journal's first snapshot (0.2 s of CPU for 18,000 files here), and a
snapshot holds the interpreter's lock, as the Claude Agent SDK's import does, so the run's
first model request waits for it.

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
leaves `argv` and `walk`), so it loads nothing else of wizard.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import os
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from wizard.argv import option_value, run_words
from wizard.walk import walk

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
_ahead: tuple[subprocess.Popen[bytes], Path] | None = None


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


def fingerprint_folder(
    folder: Path, repos: dict[str, str], prefix: str, stop: Callable[[], bool] = lambda: False
) -> dict[str, str]:
    """Every file, folder and link beneath `folder` (never through a link), each with its
    metadata; a `.git` found on the way is added to `repos` (as `prefix/...`). `stop`, asked
    at each folder, gives it up (`ListingStopped`). What cannot be listed or looked at (it
    went away, no permission) is passed over, as `walk` does.

    This is the walk of every file of a project's dependency folders, on the way to the
    first model request and at the close, so it is written out here rather than over `walk`
    (a quarter less time at 18,000 files): each mode's text is made once."""
    listing: dict[str, str] = {}
    texts: dict[int, str | tuple[str, str]] = {}  # `_text_of` each mode met
    root = os.fspath(folder)
    stack = [""]
    while stack:
        relative = stack.pop()
        try:
            with os.scandir(f"{root}/{relative}" if relative else root) as found:
                items = list(found)
        except OSError:
            continue
        head = f"{relative}/" if relative else ""
        for item in items:
            try:
                info = item.stat(follow_symlinks=False)
            except OSError:
                continue
            path = head + item.name
            text = texts.get(info.st_mode)
            if text is None:
                text = texts[info.st_mode] = _text_of(info.st_mode)
            if isinstance(text, tuple):
                listing[path] = (
                    f"{text[0]}:{info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}:"
                    f"{info.st_ino}:{text[1]}"
                )
            elif text:  # a folder
                if stop():
                    raise ListingStopped(root)
                if item.name == ".git":
                    repos[f"{prefix}/{path}"] = "folder"
                listing[path] = text  # its own mtime says little
                stack.append(path)
            else:
                with contextlib.suppress(OSError):
                    listing[path] = "l:" + os.readlink(item.path)
    return listing


def _text_of(mode: int) -> str | tuple[str, str]:
    """What a listing says of an entry of `mode`: a folder's text; "" for a link; a file's
    type and permissions, around its size, times and inode."""
    if stat.S_ISDIR(mode):
        return f"d:{stat.S_IMODE(mode):o}"
    if stat.S_ISLNK(mode):
        return ""
    return f"{stat.S_IFMT(mode):o}", f"{stat.S_IMODE(mode):o}"


def heavy_folders(root: Path) -> Iterator[str]:
    """Each dependency or build folder beneath `root`, as a snapshot finds it (never inside
    another, nor inside a `.git`)."""
    for path, name, info in walk(root, lambda name: name not in NOT_WALKED):
        if name in HEAVY_FOLDERS and stat.S_ISDIR(info.st_mode):
            yield path


def folder_listing(
    folder: Path, path: str, stop: Callable[[], bool] = lambda: False
) -> FolderListing:
    """The listing of `folder`, the project's folder at `path`."""
    repos: dict[str, str] = {}
    data = json.dumps(fingerprint_folder(folder, repos, path, stop), sort_keys=True)
    encoded = data.encode()
    return FolderListing(path, digest_of(encoded), encoded, repos)


def digest_of(data: bytes) -> str:
    """The name a listing is kept under."""
    return hashlib.sha1(data, usedforsecurity=False).hexdigest()


def start_ahead(argv: Sequence[str]) -> int | None:
    """List the project's dependency folders in a process of its own, if this command line
    runs a program or a skill on a project (`take_ahead`); its process id."""
    global _ahead
    words = run_words(argv, _RUNS)
    if words is None or len(words) < 2 or _ahead is not None:
        return None
    atexit.register(discard_ahead)  # first: the process goes whenever wizard does
    try:
        project = Path(option_value(argv, "--project") or ".").resolve(strict=True)
        process = subprocess.Popen(
            [sys.executable, "-I", "-m", "wizard.listings", str(project)],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            cwd="/", env=_locale(),
        )  # fmt: skip
    except (OSError, RuntimeError):  # no such folder (the run says so), or no process
        return None
    _ahead = (process, project)
    return process.pid


def _locale() -> dict[str, str]:
    """The listing process's environment: the locale alone, which decides how a file's name
    is decoded (as in wizard's own process, so a listing reads the same either way)."""
    return {key: value for key, value in os.environ.items()
            if key == "LANG" or key.startswith("LC_")}  # fmt: skip


def take_ahead(project: Path) -> list[FolderListing] | None:
    """The listings of `project`'s dependency folders taken ahead, once that process has
    ended (waited for); None if none were taken for it, or they cannot be trusted whole (the
    process failed, or printed what is not a whole listing)."""
    global _ahead
    taken, _ahead = _ahead, None
    if taken is None:
        return None
    process, listed = taken
    if listed != project:
        _end(process)
        return None
    try:
        output, _ = process.communicate()
    except BaseException:  # a Ctrl-C while it lists
        _end(process)
        raise
    if process.returncode != 0:
        return None
    try:
        return list(_read(output))
    except (ValueError, KeyError, TypeError):
        return None


def discard_ahead() -> None:
    """End the listing process if no run took it (before the run's sweep of what it left
    running, which would count it as the agent's, and at exit)."""
    global _ahead
    taken, _ahead = _ahead, None
    if taken is not None:
        _end(taken[0])


def _end(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        process.kill()
        process.communicate(timeout=5)


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
