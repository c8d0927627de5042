"""A project's dependency folders listed ahead of its run, in a process of its own
(`wizard.listings`): the journal's own listings, or none."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from wizard import listings
from wizard.ahead import Timeline
from wizard.journal import Journal
from wizard.listings import (
    LISTED_AHEAD,
    FolderListing,
    ListingAhead,
    ListingStopped,
    read_listing,
    start_ahead,
    take_ahead,
)
from wizard.walk import walk


@pytest.fixture
def ahead() -> Iterator[Timeline]:
    """A run's timeline; what nothing took on it is discarded afterwards."""
    timeline = Timeline()
    yield timeline
    timeline.close()


def _project(root: Path) -> Path:
    """A project whose dependency folders hold what a listing must tell apart: files of
    each mode, links, a repository, a name that is not UTF-8, nested and sibling folders."""
    project = root / "project"
    modules = project / "node_modules"
    (modules / "left-pad" / ".git").mkdir(parents=True)
    (modules / "left-pad" / "index.js").write_text("module.exports = 1;\n")
    (modules / ".bin").mkdir()
    (modules / ".bin" / "jest").symlink_to("../left-pad/index.js")
    tool = modules / "left-pad" / "cli.js"
    tool.write_text("#!/usr/bin/env node\n")
    tool.chmod(0o755)
    (modules / os.fsdecode(b"caf\xe9.js")).write_text("x\n")
    (project / "packages" / "a" / "node_modules" / "b").mkdir(parents=True)
    (project / "packages" / "a" / "node_modules" / "b" / "package.json").write_text("{}\n")
    (project / ".venv" / "lib").mkdir(parents=True)
    (project / ".venv" / "lib" / "x.pth").write_text("import os\n")
    (project / ".git" / "node_modules").mkdir(parents=True)  # inside .git: not the project's
    (project / "app.js").write_text("require('left-pad');\n")
    return project


def _listed(project: Path) -> list[FolderListing] | None:
    ahead = Timeline()
    start_ahead(["run", "transactional-email", "--ci", "--project", str(project)], ahead)
    try:
        return take_ahead(ahead, project.resolve())
    finally:
        ahead.close()


def test_the_listings_taken_ahead_are_the_ones_the_journal_takes(tmp_path: Path) -> None:
    project = _project(tmp_path)
    taken = _listed(project)
    assert taken is not None
    journal = Journal(project)
    own = journal.store.heavy_listings()
    assert {listing.path: (listing.digest, listing.repos) for listing in taken} == own
    assert set(own) == {"node_modules", "packages/a/node_modules", ".venv"}
    assert own["node_modules"][1] == {"node_modules/left-pad/.git": "folder"}
    # A first snapshot given them keeps them, and records what one that lists them does.
    given = journal.begin("ahead", "p", ahead=lambda: taken)
    itself = journal.begin("itself", "p")
    assert given.heavy_before == itself.heavy_before
    assert given.repos_before == itself.repos_before


_KINDS = {stat.S_IFREG: "f", stat.S_IFIFO: "p"}


def _seconds(nanoseconds: int) -> str:
    whole, rest = divmod(nanoseconds, 10**9)
    return f"{whole}.{rest:09d}0"


def test_the_dependency_folders_found_are_the_ones_a_walk_of_every_entry_finds(
    tmp_path: Path,
) -> None:
    """Found from each folder's entry types alone: the same as a walk that looks at every
    entry (a link named like one, or to one, is not one; nor is one inside another or inside
    a `.git`)."""
    project = _project(tmp_path)
    (project / "src" / "build").mkdir(parents=True)
    (project / "src" / "dist").write_text("a file, not a folder\n")
    (project / "linked").symlink_to(project / "packages", target_is_directory=True)
    (project / "src" / "node_modules").symlink_to(tmp_path, target_is_directory=True)
    (project / "node_modules" / "left-pad" / "node_modules").mkdir()
    walked = [
        path
        for path, name, info in walk(project, lambda name: name not in listings.NOT_WALKED)
        if name in listings.HEAVY_FOLDERS and stat.S_ISDIR(info.st_mode)
    ]
    found = list(listings.heavy_folders(project))
    assert sorted(found) == sorted(walked)
    assert sorted(found) == [".venv", "node_modules", "packages/a/node_modules", "src/build"]


def _as_lstat_says(folder: Path) -> tuple[dict[str, str], dict[str, str]]:
    """What a listing of `folder` says of each entry, from `os.walk` and `os.lstat` one path
    at a time (its documented format), and the repositories in it."""
    said: dict[str, str] = {}
    repos: dict[str, str] = {}
    for parent, folders, files in os.walk(folder):
        for name in (*folders, *files):
            path = Path(parent, name)
            info = os.lstat(path)
            key = str(path.relative_to(folder))
            bits = f"{stat.S_IMODE(info.st_mode):o}"
            if stat.S_ISLNK(info.st_mode):
                said[key] = f"l:{os.readlink(path)}"
            elif stat.S_ISDIR(info.st_mode):
                said[key] = f"d:{bits}"
                if name == ".git":
                    repos[f"deps/{key}"] = "folder"
            else:
                times = f"{_seconds(info.st_mtime_ns)}:{_seconds(info.st_ctime_ns)}"
                kind = _KINDS[stat.S_IFMT(info.st_mode)]
                said[key] = f"{kind}:{bits}:{info.st_size}:{times}:{info.st_ino}"
    return said, repos


def _odd_entries(modules: Path, outside: Path) -> None:
    """Entries a listing must say exactly: a fifo, a setuid file in a mode-700 folder, links
    dangling, outward and with a tab in their target, names with a tab or a line break, times
    set back before 1970 (a fraction of a second, and more), a hard link."""
    os.mkfifo(modules / "left-pad" / "pipe")
    (modules / "left-pad" / "lib").mkdir(mode=0o700)
    (modules / "left-pad" / "lib" / "setuid").write_text("x\n")
    (modules / "left-pad" / "lib" / "setuid").chmod(0o4755)
    (modules / "dangling").symlink_to("nowhere/at all")
    (modules / "tab\tlink").symlink_to("a\tb")
    (modules / "line\nbreak.js").write_text("x\n")
    os.utime(modules / "left-pad" / "index.js", ns=(1, 1_000_000_123))  # mtime set back
    os.utime(modules / "line\nbreak.js", ns=(1, -250_000_000))
    os.utime(modules / "left-pad" / "cli.js", ns=(1, -315_619_199_750_000_000))
    os.link(modules / "left-pad" / "cli.js", modules / "hard.js")
    (modules / "outside").symlink_to(outside, target_is_directory=True)  # never walked


def test_a_listing_says_each_entry_as_lstat_sees_it(tmp_path: Path) -> None:
    modules = _project(tmp_path) / "node_modules"
    _odd_entries(modules, tmp_path)
    listing = listings.folder_listing(modules, "deps")
    assert (read_listing(listing.data), dict(listing.repos)) == _as_lstat_says(modules)
    assert read_listing(listing.data)["outside"] == f"l:{tmp_path}"


def test_find_and_wizard_s_own_walk_list_a_folder_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    modules = _project(tmp_path) / "node_modules"
    _odd_entries(modules, tmp_path)
    found = listings.list_folder(modules)
    assert listings._found(modules, lambda: False) is not None  # GNU find listed it
    monkeypatch.setattr(listings, "_SYSTEM_PATH", str(tmp_path / "no-find-here"))
    assert listings._found(modules, lambda: False) is None
    assert listings.list_folder(modules) == found


@pytest.mark.timeout(60)  # a `find` waited for instead of ended: it would sleep for 600 s
def test_a_listing_given_up_on_leaves_no_find_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `find` still listing when the listing is given up on (a tool call was let through)
    is ended, not left to run."""
    modules = _project(tmp_path) / "node_modules"
    slow = tmp_path / "bin"
    slow.mkdir()
    sleep = shutil.which("sleep")
    (slow / "find").write_text(f"#!/bin/sh\necho $$ > {tmp_path}/pid\nexec {sleep} 600\n")
    (slow / "find").chmod(0o755)
    monkeypatch.setattr(listings, "_SYSTEM_PATH", str(slow))
    asked: list[bool] = []

    def stop() -> bool:
        asked.append(True)
        return (tmp_path / "pid").exists() and len(asked) > 2

    with pytest.raises(ListingStopped):
        listings.list_folder(modules, stop)
    with pytest.raises(ProcessLookupError):
        os.kill(int((tmp_path / "pid").read_text()), 0)


def test_a_thread_that_lists_gently_runs_its_find_at_the_lowest_priority_and_itself_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A walk ahead lists gently (`list_gently`): its `find` yields to the engine; the thread
    keeps the run's priority, since one starved while it holds Python's lock holds up the
    run's other threads."""
    modules = _project(tmp_path) / "node_modules"
    stand_in = tmp_path / "bin"
    stand_in.mkdir()
    sleep, nice, find = (shutil.which(name) for name in ("sleep", "nice", "find"))
    said = tmp_path / "nice"
    (stand_in / "find").write_text(f'#!/bin/sh\n{sleep} 0.2\n{nice} > {said}\nexec {find} "$@"\n')
    (stand_in / "find").chmod(0o755)
    monkeypatch.setattr(listings, "_SYSTEM_PATH", str(stand_in))
    ours = os.getpriority(os.PRIO_PROCESS, 0)
    seen: dict[str, object] = {}

    def lister() -> None:
        listings.list_gently()
        seen["listing"] = listings.list_folder(modules)
        seen["own"] = os.getpriority(os.PRIO_PROCESS, 0)  # Linux: the thread's own

    thread = threading.Thread(target=lister)
    thread.start()
    thread.join()
    assert said.read_text().strip() == "19" and seen["own"] == ours
    assert seen["listing"] == listings.list_folder(modules)  # this thread lists as it was
    assert said.read_text().strip() == str(ours)


def test_a_listing_of_another_project_is_not_taken_and_ends(
    tmp_path: Path, ahead: Timeline
) -> None:
    project = _project(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    start_ahead(["run", "transactional-email", "--project", str(project)], ahead)
    listing = ahead.peek(LISTED_AHEAD)
    assert listing is not None
    assert take_ahead(ahead, other) is None
    assert listing.process.returncode is not None
    assert take_ahead(ahead, project.resolve()) is None  # taken once, whatever became of it


def test_a_listing_nothing_took_is_ended_with_the_run_s_timeline(
    tmp_path: Path, ahead: Timeline
) -> None:
    start_ahead(["run", "transactional-email", "--project", str(_project(tmp_path))], ahead)
    listing = ahead.peek(LISTED_AHEAD)
    assert listing is not None
    ahead.close()
    assert listing.process.returncode is not None
    assert not ahead.has(LISTED_AHEAD)


@pytest.mark.parametrize(
    ("argv", "lists"),
    [
        (["run", "revenue-analytics", "--project", "{project}"], True),
        (["run", "--ci", "revenue-analytics", "--project={project}"], True),
        (["skill", "posthog-email", "--project", "{project}"], True),
        (["run", "revenue-analytics"], True),  # the working folder
        (["run", "revenue-analytics", "--project", "{project}/missing"], False),
        (["run", "revenue-analytics", "--project", "{project}", "--help"], False),
        (["demo"], False),  # its own project
        (["undo", "--project", "{project}"], False),
        (["--version"], False),
        ([], False),
    ],
)
def test_only_a_run_on_a_project_lists_ahead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ahead: Timeline, argv: list[str], lists: bool
) -> None:
    monkeypatch.chdir(tmp_path)
    start_ahead([word.format(project=tmp_path) for word in argv], ahead)
    listing = ahead.peek(LISTED_AHEAD)
    assert (listing is not None) is lists
    if listing is not None:
        assert listing.project == tmp_path.resolve()


def _ahead_from(ahead: Timeline, project: Path, output: bytes, code: int) -> None:
    """A listing process that printed `output` and ended with `code`, on `ahead`."""
    script = f"import sys; sys.stdout.buffer.write({output!r}); sys.exit({code})"
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE)
    ahead.start(LISTED_AHEAD, ListingAhead(process, project))


def _printed(listing: FolderListing, data: bytes | None = None) -> bytes:
    body = listing.data if data is None else data
    head = (f'{{"path": "{listing.path}", "digest": "{listing.digest}", "size": {len(body)}, '
            f'"repos": {{}}}}\n')  # fmt: skip
    return head.encode() + body


@pytest.mark.parametrize(
    ("case", "code"),
    [("whole", 0), ("failed", 1), ("truncated", 0), ("other data", 0), ("garbage", 0),
     ("repos not names", 0)],
)  # fmt: skip
def test_a_listing_that_is_not_whole_is_not_taken(
    tmp_path: Path, ahead: Timeline, case: str, code: int
) -> None:
    project = _project(tmp_path)
    listing = listings.folder_listing(project / "node_modules", "node_modules")
    output = {
        "whole": _printed(listing),
        "failed": _printed(listing),
        "truncated": _printed(listing)[:-5],
        "other data": _printed(listing, listing.data + b" "),
        "garbage": b"not a listing\n",
        "repos not names": _printed(listing).replace(b'"repos": {}', b'"repos": {"a": 1}'),
    }[case]
    _ahead_from(ahead, project, output, code)
    taken = take_ahead(ahead, project)
    if case == "whole":
        assert taken == [FolderListing(listing.path, listing.digest, listing.data, {})]
    else:
        assert taken is None
