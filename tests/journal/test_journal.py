"""The run journal: snapshots in a private git store, and undo restoring byte for byte."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.journal.trees import state
from wizard.errors import ConfigError, UsageError
from wizard.journal import Journal, Listed, UndoRefused
from wizard.journal import store as store_module
from wizard.journal.store import GitStore
from wizard.listings import ListingStopped

NAMES = st.sampled_from(["a", "b", "c.txt", "d.bin", "e", "run.sh"])
FOLDERS = st.lists(st.sampled_from(["src", "lib", "deep"]), max_size=2)
MODES = st.sampled_from([0o644, 0o755, 0o600, 0o640, 0o700])
CONTENT = st.binary(max_size=64)


@st.composite
def trees(draw: st.DrawFn) -> list[tuple[str, str, bytes | str, int]]:
    """Entries of a tree: (path, kind, content or link target, mode)."""
    entries = {}
    for _ in range(draw(st.integers(1, 8))):
        path = "/".join([*draw(FOLDERS), draw(NAMES)])
        if any(p.startswith(path + "/") or path.startswith(p + "/") for p in entries):
            continue
        if draw(st.integers(0, 5)) == 0:
            entries[path] = ("link", draw(st.sampled_from(["a", "../x", "c.txt"])), 0)
        else:
            entries[path] = ("file", draw(CONTENT), draw(MODES))
    return [(path, *entry) for path, entry in entries.items()]


def build(root: Path, entries: list[tuple[str, str, bytes | str, int]]) -> None:
    for path, kind, content, mode in entries:
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_symlink() or target.is_file():
            target.unlink()
        if kind == "link":
            target.symlink_to(str(content))
        else:
            assert isinstance(content, bytes)
            target.write_bytes(content)
            target.chmod(mode)


def rebuild(root: Path, entries: list[tuple[str, str, bytes | str, int]]) -> None:
    """`build` over an existing tree: a file may give way to a folder and back."""
    for path, *_ in entries:
        for parent in Path(path).parents:
            if (root / parent).is_file() or (root / parent).is_symlink():
                (root / parent).unlink()
        if (root / path).is_dir() and not (root / path).is_symlink():
            shutil.rmtree(root / path)
    build(root, entries)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(before=trees(), after=trees(), deletions=st.lists(st.integers(0, 7), max_size=3))
def test_undo_restores_any_tree_byte_for_byte(
    tmp_path_factory: pytest.TempPathFactory,
    before: list[tuple[str, str, bytes | str, int]],
    after: list[tuple[str, str, bytes | str, int]],
    deletions: list[int],
) -> None:
    project = tmp_path_factory.mktemp("project")
    build(project, before)
    original = state(project)
    journal = Journal(project, tmp_path_factory.mktemp("state"))
    record = journal.begin("run1", "test")
    # The "run": delete some files, rewrite or add others (modes, binary, links, folders).
    for index in deletions:
        if index < len(before):
            victim = project / before[index][0]
            if victim.is_symlink() or victim.is_file():
                victim.unlink()
    rebuild(project, after)
    finished = journal.finish(record, "succeeded")
    result = state(project)
    journal.undo(finished, "undo1")
    assert state(project) == original
    # And the undo is journaled: undoing it brings the run's result back.
    journal.undo(journal.find("undo1"), "undo2")
    assert state(project) == result


def test_undo_refuses_after_a_user_edit_and_changes_nothing(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    (project / "app.py").write_text("v1\n")
    journal = Journal(project, tmp_path / "state")
    record = journal.begin("r1", "test")
    (project / "app.py").write_text("v2 by the agent\n")
    (project / "new.py").write_text("added\n")
    finished = journal.finish(record, "succeeded")
    (project / "app.py").write_text("v3 by the user\n")
    with pytest.raises(UndoRefused) as refused:
        journal.undo(finished, "u1")
    assert refused.value.paths == ["app.py"]
    assert (project / "app.py").read_text() == "v3 by the user\n"
    assert (project / "new.py").exists()
    undone = journal.undo(finished, "u2", force=True)
    assert (project / "app.py").read_text() == "v1\n" and not (project / "new.py").exists()
    assert "removed new.py" in undone.restored


def test_heavy_folders_are_listed_not_copied_and_their_changes_are_named(tmp_path: Path) -> None:
    project = tmp_path / "p"
    (project / "node_modules" / "left-pad").mkdir(parents=True)
    (project / "node_modules" / "left-pad" / "index.js").write_text("x")
    journal = Journal(project, tmp_path / "state")
    record = journal.begin("r1", "test")
    (project / "node_modules" / "right-pad").mkdir()
    finished = journal.finish(record, "succeeded")
    assert finished.heavy_changed == ["node_modules"]
    assert finished.changed == []


def _listed_as_json_was(folder: Path) -> bytes:
    """A folder's listing as a wizard kept it before listings were `find`'s: JSON, each file
    its type and permissions in octal around its size, times in nanoseconds and inode."""
    listing: dict[str, str] = {}
    for parent, folders, files in os.walk(folder):
        for name in (*folders, *files):
            path = Path(parent, name)
            info = os.lstat(path)
            kind, bits = stat.S_IFMT(info.st_mode), stat.S_IMODE(info.st_mode)
            listing[str(path.relative_to(folder))] = (
                f"l:{os.readlink(path)}" if stat.S_ISLNK(info.st_mode)
                else f"d:{bits:o}" if stat.S_ISDIR(info.st_mode)
                else f"{kind:o}:{info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}:"
                f"{info.st_ino}:{bits:o}"
            )  # fmt: skip
    return json.dumps(listing, sort_keys=True).encode()


def test_a_run_resumed_after_an_upgrade_reads_its_old_listings_alike(tmp_path: Path) -> None:
    """A run recorded by a wizard that kept its dependency listings as JSON, closed by this
    one: an unchanged folder is not changed, and a changed file is the only one named (undo
    removes what it names)."""
    project = tmp_path / "p"
    modules = project / "node_modules"
    (modules / "left-pad" / "lib").mkdir(parents=True)
    (modules / "left-pad" / "index.js").write_text("x")
    (modules / "left-pad" / "lib" / "tool").write_text("#!/bin/sh\n")
    (modules / "left-pad" / "lib" / "tool").chmod(0o755)
    (modules / ".bin").mkdir()
    (modules / ".bin" / "tool").symlink_to("../left-pad/lib/tool")
    os.utime(modules / "left-pad" / "index.js", ns=(1, -250_000_000))
    journal = Journal(project, tmp_path / "state")
    record = journal.begin("r1", "test")
    old = _listed_as_json_was(modules)
    digest = hashlib.sha1(old).hexdigest()
    (journal.state / "deps" / f"{digest}.json").write_bytes(old)
    record = record.model_copy(update={"heavy_before": {"node_modules": digest}})
    (project / "app.py").write_text("agent\n")
    finished = journal.finish(record, "succeeded")
    assert (finished.heavy_changed, finished.dependency_changes) == ([], {})
    with (modules / "left-pad" / "index.js").open("a") as payload:
        payload.write("evil()")
    again = journal.finish(record, "succeeded")
    assert again.heavy_changed == ["node_modules"]
    assert again.dependency_changes == {"node_modules/left-pad/index.js": "changed"}


def test_a_snapshot_asks_for_listings_being_taken_once_it_walked_the_rest(
    tmp_path: Path,
) -> None:
    """The first snapshot walks the project's own files while the dependency folders'
    listings may still be being taken (`wizard.listings`), and asks for them after that
    walk: once."""
    project = tmp_path / "p"
    (project / "node_modules" / "left-pad").mkdir(parents=True)
    (project / "node_modules" / "left-pad" / "index.js").write_text("x")
    (project / "app.py").write_text("app\n")
    store = Journal(project, tmp_path / "state").store
    before = store.snapshot()
    listed = store.heavy_listings()
    asked: list[bool] = []

    def later() -> Listed:
        asked.append(True)
        (project / "late.py").write_text("written once the walk was done\n")
        return listed

    snapshot = store.snapshot(listed=later)
    assert asked == [True]
    assert snapshot.heavy == {"node_modules": listed["node_modules"][0]} == before.heavy
    assert store.changes(before.tree, snapshot.tree) == []  # late.py: not walked


def test_a_snapshot_on_a_walk_taken_ahead_walks_again_only_the_names_it_left_out(
    tmp_path: Path,
) -> None:
    """The closing snapshot of a run that ran nothing since its walk ahead takes that walk,
    and walks again only the root's names it left out (where wizard itself writes)."""
    project = tmp_path / "p"
    (project / "node_modules" / "left-pad").mkdir(parents=True)
    (project / "node_modules" / "left-pad" / "index.js").write_text("x")
    (project / "app.py").write_text("app\n")
    (project / ".gitconfig").write_text("")  # a placeholder, standing while the walk is taken
    store = Journal(project, tmp_path / "state").store
    before = store.snapshot()
    (project / "app.py").write_text("changed before the walk\n")
    walked = store.walk(listed=store.heavy_listings(), leave=frozenset({".claude", ".gitconfig"}))
    assert walked.left_out == {".claude", ".gitconfig"} and "app.py" in walked.lines
    (project / ".gitconfig").unlink()
    (project / ".claude" / "skills").mkdir(parents=True)
    (project / ".claude" / "skills" / "SKILL.md").write_text("installed after the walk\n")
    (project / "late.py").write_text("not walked again: the walk stands for it\n")
    snapshot = store.snapshot(ahead=walked)
    changes = {(c.status, c.path) for c in store.changes(before.tree, snapshot.tree)}
    assert changes == {("M", "app.py"), ("D", ".gitconfig"), ("A", ".claude/skills/SKILL.md")}
    assert snapshot.heavy == before.heavy
    # The tree is the listing's, whichever walk found its files.
    (project / "late.py").unlink()
    assert store.snapshot().tree == snapshot.tree


def test_a_walk_leaves_out_only_the_root_s_own_names(tmp_path: Path) -> None:
    project = tmp_path / "p"
    (project / "src" / ".claude").mkdir(parents=True)
    (project / "src" / ".claude" / "deep.md").write_text("kept\n")
    (project / ".claude").mkdir()
    (project / ".claude" / "top.md").write_text("left out\n")
    store = Journal(project, tmp_path / "state").store
    walked = store.walk(leave=frozenset({".claude"}))
    assert set(walked.lines) == {"src/.claude/deep.md"}
    assert set(walked.without(frozenset({"src"})).lines) == set()
    assert set(store.walk(only=frozenset({".claude"})).lines) == {".claude/top.md"}
    with pytest.raises(ListingStopped):  # a walk ahead given up on: a call was let through
        store.walk(stop=lambda: True)


def test_a_git_repository_is_left_untouched(tmp_path: Path) -> None:
    project = tmp_path / "repo"
    project.mkdir()

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", *args], cwd=project, capture_output=True, text=True, check=True
        )
        return done.stdout

    git("init", "-q")
    git("config", "user.email", "u@example.com")
    git("config", "user.name", "u")
    (project / "a.txt").write_text("one\n")
    (project / ".gitignore").write_text(".env\n")
    git("add", ".")
    git("commit", "-qm", "first")
    (project / "a.txt").write_text("stashed\n")
    git("stash", "-q")
    (project / "a.txt").write_text("staged\n")
    git("add", "a.txt")
    (project / ".env").write_text("SECRET=1\n")

    def view() -> tuple[str, ...]:
        return (
            git("status", "--porcelain", "--ignored"),
            git("rev-parse", "HEAD"),
            git("stash", "list"),
            git("for-each-ref"),
            git("diff", "--cached"),
        )

    seen = view()
    journal = Journal(project, tmp_path / "state")
    record = journal.begin("r1", "test")
    (project / "a.txt").write_text("agent\n")
    (project / ".env").write_text("SECRET=2\n")
    finished = journal.finish(record, "succeeded")
    assert finished.changed == [".env", "a.txt"]  # .gitignore does not hide .env from undo
    journal.undo(finished, "u1")
    assert (project / "a.txt").read_text() == "staged\n"
    assert (project / ".env").read_text() == "SECRET=1\n"
    assert view() == seen


def test_the_journal_keeps_the_newest_runs_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WIZARD_JOURNAL_KEEP", "2")
    project = tmp_path / "p"
    project.mkdir()
    journal = Journal(project, tmp_path / "state")
    for n in range(3):
        (project / "f.txt").write_text(f"version {n}\n")
        journal.finish(journal.begin(f"r{n}", "test"), "succeeded")
    assert [r.run_id for r in journal.records()] == ["r2", "r1"]
    refs = subprocess.run(
        ["git", "--git-dir", str(journal.store.git_dir), "for-each-ref", "--format=%(refname)"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    assert not any("/r0/" in ref for ref in refs) and any("/r2/" in ref for ref in refs)


def test_a_prune_drops_the_forgotten_blobs_and_keeps_the_stat_cache_of_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the journal's limit every run prunes: a run after it used to rehash and rewrite
    every file of the project (the stat cache was dropped whole) and repack the store."""
    monkeypatch.setenv("WIZARD_JOURNAL_KEEP", "1")
    project = tmp_path / "p"
    project.mkdir()
    (project / "kept.txt").write_text("the same in every run\n")
    journal = Journal(project, tmp_path / "state")
    store = journal.store

    def blob(text: str) -> str:
        data = text.encode()
        return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()

    def stored(blob_id: str) -> bool:
        return subprocess.run(["git", "--git-dir", str(store.git_dir), "cat-file", "-e", blob_id],
                              capture_output=True, check=False).returncode == 0  # fmt: skip

    (project / "f.txt").write_text("version 0\n")
    journal.finish(journal.begin("r0", "test"), "succeeded")
    (project / "f.txt").write_text("version 1\n")
    journal.finish(journal.begin("r1", "test"), "succeeded")  # prunes r0
    assert not stored(blob("version 0\n")) and stored(blob("version 1\n"))
    cache = _cache_on_disk(store)
    assert set(cache) == {"kept.txt", "f.txt"} and cache["f.txt"].endswith(blob("version 1\n"))
    rehashed: list[str] = []
    real = store._store
    monkeypatch.setattr(store, "_store", lambda root, entry, blobs: rehashed.append(entry.path)
                        or real(root, entry, blobs))  # fmt: skip
    journal.begin("r2", "test")
    assert rehashed == [], "a snapshot after a prune rehashed files that had not changed"


def _cache_on_disk(store: GitStore) -> dict[str, str]:
    """The stat cache as a new process reads it."""
    return dict(GitStore(store.project, store.state)._load_cache("stat-cache"))


def _app(project: Path, files: int, version: str) -> None:
    """`files` small files, more than git stores loose from one import (its limit is 100)."""
    for number in range(files):
        folder = project / "src" / f"mod{number % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{number}.js").write_text(f"module.exports = '{version}{number}';\n")


def _blob(text: str) -> str:
    data = text.encode()
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def _objects(store: Path) -> tuple[list[str], set[str]]:
    """The store's pack files, and the kinds of its loose objects (a snapshot's trees are
    written loose)."""
    objects = store / "objects"
    packs = sorted(path.name for path in (objects / "pack").iterdir())
    loose = [f"{path.parent.name}{path.name}" for path in objects.glob("[0-9a-f][0-9a-f]/*")]
    if not loose:
        return packs, set()
    kinds = ["git", "--git-dir", str(store), "cat-file", "--batch-check=%(objecttype)"]
    answer = subprocess.run(kinds, input="\n".join(loose) + "\n", capture_output=True,
                            text=True, check=True)  # fmt: skip
    return packs, set(answer.stdout.split())


def test_a_snapshot_stores_its_new_blobs_as_one_pack(tmp_path: Path) -> None:
    project = tmp_path / "p"
    _app(project, 150, "v0")
    journal = Journal(project, tmp_path / "state")
    record = journal.begin("r0", "test")
    packs, loose = _objects(journal.store.git_dir)
    assert len([name for name in packs if name.endswith(".pack")]) == 1 and loose == {"tree"}
    before = {path: path.read_bytes() for path in project.rglob("*.js")}
    _app(project, 150, "v1")
    undone = journal.undo(journal.finish(record, "succeeded"), "u0")
    assert len(undone.restored) == 150
    assert {path: path.read_bytes() for path in project.rglob("*.js")} == before
    # A close that changed a few files writes them loose, each a file, without an import.
    packs = _objects(journal.store.git_dir)[0]
    record = journal.begin("r1", "test")
    (project / "src" / "mod0" / "f0.js").write_text("changed\n")
    journal.finish(record, "succeeded")
    assert _objects(journal.store.git_dir)[0] == packs
    blob = _blob("changed\n")
    assert (journal.store.git_dir / "objects" / blob[:2] / blob[2:]).is_file()


def test_content_that_reads_as_the_import_s_commands_is_stored_as_bytes(tmp_path: Path) -> None:
    """A file of the agent's may hold what git's import reads as commands: each blob goes by
    its length, so its bytes are stored as they are, and nothing else is."""
    project = tmp_path / "p"
    _app(project, 40, "v0")  # more than are written loose: the import takes them all
    planted = b"x\ndone\nblob\nmark :1\ndata 4\nevil\ncommit refs/heads/main\n" + bytes(range(256))
    (project / "planted.txt").write_bytes(planted)
    journal = Journal(project, tmp_path / "state")
    record = journal.begin("r0", "test")
    (project / "planted.txt").write_bytes(b"changed\n")
    journal.undo(journal.finish(record, "succeeded"), "u0")
    assert (project / "planted.txt").read_bytes() == planted
    git = ["git", "--git-dir", str(journal.store.git_dir)]
    refs = subprocess.run([*git, "for-each-ref", "--format=%(refname)"], capture_output=True,
                          text=True, check=True).stdout.split()  # fmt: skip
    assert all(ref.startswith("refs/wizard/") for ref in refs)
    assert subprocess.run([*git, "cat-file", "-e", _blob("evil")], check=False).returncode != 0


def test_a_snapshot_that_fails_midway_keeps_nothing_of_its_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "p"
    _app(project, 150, "v0")
    journal = Journal(project, tmp_path / "state")
    real, stored = GitStore._store, []

    def failing(self: GitStore, *args: Any) -> str:
        if len(stored) == 120:
            raise OSError("the disk went away")
        stored.append(args)
        return real(self, *args)

    monkeypatch.setattr(GitStore, "_store", failing)
    with pytest.raises(OSError, match="went away"):
        journal.begin("r0", "test")
    assert _objects(journal.store.git_dir) == ([], set())


def test_an_import_git_refuses_says_what_git_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "p"
    _app(project, 40, "v0")  # more than are written loose
    monkeypatch.setattr(store_module, "_IMPORT", ("fast-import", "--no-such-option"))
    journal = Journal(project, tmp_path / "state")
    with pytest.raises(ConfigError, match="unknown option --no-such-option") as refused:
        journal.begin("r0", "test")
    assert "remove it to start the journal afresh" in (refused.value.hint or "")
    assert not list(journal.store.git_dir.glob("fast_import_crash_*"))


def test_a_prune_packs_the_packs_into_one_without_what_it_forgot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WIZARD_JOURNAL_KEEP", "1")
    monkeypatch.setattr(store_module, "_PACKS", 1)
    project = tmp_path / "p"
    _app(project, 150, "v0")
    journal = Journal(project, tmp_path / "state")
    journal.finish(journal.begin("r0", "test"), "succeeded")
    old = _blob("module.exports = 'v07';\n")
    _app(project, 150, "v1")
    journal.finish(journal.begin("r1", "test"), "succeeded")  # prunes r0: two packs, one kept
    packs, loose = _objects(journal.store.git_dir)
    assert len([name for name in packs if name.endswith(".pack")]) == 1 and "blob" not in loose
    git = ["git", "--git-dir", str(journal.store.git_dir), "cat-file", "-e"]
    assert subprocess.run([*git, old], check=False).returncode != 0, "a forgotten blob stayed"
    new = _blob("module.exports = 'v17';\n")
    assert subprocess.run([*git, new], check=False).returncode == 0


def test_the_stat_cache_is_written_only_when_a_stat_changed(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    (project / "f.txt").write_text("one\n")
    journal = Journal(project, tmp_path / "state")
    cache = journal.store.state / "stat-cache"
    record = journal.begin("r0", "test")
    written = cache.stat().st_ino
    journal.finish(record, "succeeded")  # nothing changed: the same file, not rewritten
    assert cache.stat().st_ino == written
    (project / "f.txt").write_text("two\n")
    journal.finish(journal.begin("r1", "test"), "succeeded")
    assert cache.stat().st_ino != written
    assert _cache_on_disk(journal.store)["f.txt"].startswith("4:")  # the size of "two\n"


def test_the_stat_cache_keeps_any_file_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A name that is not UTF-8, or holds a newline or a colon, is read back as it was kept:
    the next run hashes nothing again."""
    project = tmp_path / "p"
    project.mkdir()
    odd = os.fsdecode(b"caf\xe9\nname:1.txt")
    (project / odd).write_text("odd\n")
    (project / "plain.txt").write_text("plain\n")
    Journal(project, tmp_path / "state").begin("r0", "test")
    again = Journal(project, tmp_path / "state")  # a new process's
    rehashed: list[str] = []
    real = again.store._store
    monkeypatch.setattr(again.store, "_store", lambda root, entry, blobs:
                        rehashed.append(entry.path) or real(root, entry, blobs))  # fmt: skip
    again.begin("r1", "test")
    assert rehashed == [] and set(_cache_on_disk(again.store)) == {odd, "plain.txt"}


def test_a_stat_cache_is_read_once_a_run_and_an_older_wizard_s_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The closing snapshot finds the first snapshot's stat cache in memory (not read
    again); a cache an older wizard kept (JSON, each entry a list) is read as it says, so
    nothing unchanged is hashed again after an upgrade, and replaced by the run's."""
    project = tmp_path / "p"
    project.mkdir()
    (project / "a.txt").write_text("a\n")
    (project / "b.txt").write_text("b\n")
    journal = Journal(project, tmp_path / "state")
    cache, kept = journal.store.state / "stat-cache", journal.store.state / "stat-cache.json"
    journal.finish(journal.begin("r0", "test"), "succeeded")
    entries = _cache_on_disk(journal.store)
    older = {path: [*map(int, entry.split(":")[:4]), entry.split(":")[4]]
             for path, entry in entries.items()}  # fmt: skip
    cache.unlink()
    kept.write_text(json.dumps(older))
    upgraded = Journal(project, tmp_path / "state")  # a new process's, after the upgrade
    rehashed: list[str] = []
    real = upgraded.store._store
    monkeypatch.setattr(upgraded.store, "_store", lambda root, entry, blobs:
                        rehashed.append(entry.path) or real(root, entry, blobs))  # fmt: skip
    record = upgraded.begin("r1", "test")
    assert rehashed == [], "an older wizard's stat cache was not read"
    kept.write_text("not a cache")  # the close reads none: the run's own is in memory
    (project / "b.txt").write_text("bb\n")
    upgraded.finish(record, "succeeded")
    assert rehashed == ["b.txt"] and not kept.exists()
    assert _cache_on_disk(upgraded.store)["a.txt"] == entries["a.txt"]
    assert _cache_on_disk(upgraded.store)["b.txt"].startswith("3:")


def test_wizard_runs_lists_whole_run_ids(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from wizard.cli import app

    monkeypatch.setenv("WIZARD_STATE_DIR", str(tmp_path / "state"))
    project = tmp_path / "p"
    project.mkdir()
    empty = CliRunner().invoke(app, ["runs", "--project", str(project)]).output
    assert empty.startswith("No journaled runs of")  # not a bare header
    journal = Journal(project)
    record = journal.begin("0123456789ab", "transactional-email", "pi", "linear")
    (project / "x.txt").write_text("x")
    journal.finish(record, "aborted")
    output = CliRunner().invoke(app, ["runs", "--project", str(project)]).output
    assert "0123456789ab" in output and "aborted" in output


def test_an_unreadable_run_record_is_named_and_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One record cut short ended `wizard runs` in a JSONDecodeError traceback: it is named on
    stderr, and the others are listed (and `undo` still finds the run before it)."""
    from typer.testing import CliRunner

    from wizard.cli import app

    monkeypatch.setenv("WIZARD_STATE_DIR", str(tmp_path / "state"))
    project = tmp_path / "p"
    project.mkdir()
    journal = Journal(project)
    record = journal.begin("0123456789ab", "transactional-email", "pi", "linear")
    (project / "x.txt").write_text("x")
    journal.finish(record, "succeeded")
    broken = journal.runs_dir / "fedcba987654.json"
    broken.write_text('{"run_id": "fedcba98')
    result = CliRunner().invoke(app, ["runs", "--project", str(project)])
    assert result.exit_code == 0, result.output
    assert "0123456789ab" in result.stdout and "Traceback" not in result.output
    assert f"warning: left out {broken}, a run record that cannot be read" in result.stderr
    assert journal.find(None).run_id == "0123456789ab"


def test_a_second_undo_takes_back_the_run_before_and_never_flips(tmp_path: Path) -> None:
    """A second `wizard undo` re-applied the agent's changes, and each further one flipped
    again. It now undoes the run before; re-applying is the undo of the undo, named."""
    project = tmp_path / "p"
    project.mkdir()
    (project / "app.py").write_text("v1\n")
    journal = Journal(project, tmp_path / "state")
    first = journal.begin("r1", "test")
    (project / "app.py").write_text("v2\n")
    journal.finish(first, "succeeded")
    second = journal.begin("r2", "test")
    (project / "app.py").write_text("v3\n")
    journal.finish(second, "succeeded")
    journal.undo(journal.find(None), "u1")  # r2
    assert (project / "app.py").read_text() == "v2\n"
    journal.undo(journal.find(None), "u2")  # r1, not u1
    assert (project / "app.py").read_text() == "v1\n"
    with pytest.raises(UsageError):
        journal.find(None)  # nothing left to undo; undo records are never picked
    journal.undo(journal.find("u2"), "u3")  # named: r1's changes back
    assert (project / "app.py").read_text() == "v2\n"
    assert journal.get("r1") is not None and journal.get("r1").undone_by is None
    assert journal.find(None).run_id == "r1"


def test_wizard_diff_is_a_patch_git_apply_takes(tmp_path: Path) -> None:
    """Lines were wrapped at the terminal's width and padded, so `git apply` refused it."""
    from typer.testing import CliRunner

    from wizard.cli import app

    before = {"app.py": "x = 1\n", "long.py": "y = '" + "z" * 300 + "'\n", "gone.txt": "bye\n",
              "logo.bin": bytes(range(256)).decode("latin-1")}  # fmt: skip
    project = tmp_path / "p"
    project.mkdir()
    for name, text in before.items():
        (project / name).write_bytes(text.encode("latin-1"))
    journal = Journal(project, tmp_path / "state")
    record = journal.begin("r1", "test")
    (project / "long.py").write_text("y = '" + "w" * 300 + "'\n")
    (project / "gone.txt").unlink()
    (project / "new" / "deep").mkdir(parents=True)
    (project / "new" / "deep" / "n.py").write_text("n = 2\n")
    (project / "logo.bin").write_bytes(bytes(reversed(range(256))))
    journal.finish(record, "succeeded")
    after = state(project)
    env = {"WIZARD_STATE_DIR": str(tmp_path / "state"), "COLUMNS": "80"}
    result = CliRunner().invoke(app, ["diff", "r1", "--project", str(project)], env=env)
    assert result.exit_code == 0, result.output
    patch = result.stdout_bytes
    assert b"\x1b[" not in patch and not any(line.endswith(b" ") for line in patch.splitlines())
    copy = tmp_path / "copy"
    copy.mkdir()
    for name, text in before.items():
        (copy / name).write_bytes(text.encode("latin-1"))
    (tmp_path / "x.patch").write_bytes(patch)
    applied = subprocess.run(["git", "apply", str(tmp_path / "x.patch")], cwd=copy,
                             capture_output=True, text=True)  # fmt: skip
    assert applied.returncode == 0, applied.stderr
    assert state(copy) == after
    summary = CliRunner().invoke(app, ["diff", "r1", "--stat", "--project", str(project)], env=env)
    assert "4 files changed" in summary.stdout


def test_an_unchanged_listing_reuses_its_tree_and_a_prune_forgets_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A snapshot whose listing is the last one's takes that tree, without git; a changed
    file, mode or name is a new tree; a prune (which may take trees) forgets the last."""
    monkeypatch.setenv("WIZARD_JOURNAL_KEEP", "1")
    project = tmp_path / "p"
    project.mkdir()
    (project / "f.txt").write_text("one\n")
    journal = Journal(project, tmp_path / "state")
    store = journal.store
    calls: list[str] = []
    real = store._git
    monkeypatch.setattr(store, "_git", lambda *args, **kw: calls.append(args[0])
                        or real(*args, **kw))  # fmt: skip
    first = store.snapshot().tree
    calls.clear()
    assert store.snapshot().tree == first
    assert "update-index" not in calls and "write-tree" not in calls
    trees = {first}
    for change in (lambda: (project / "f.txt").write_text("two\n"),
                   lambda: (project / "f.txt").chmod(0o755),
                   lambda: (project / "f.txt").rename(project / "g.txt")):  # fmt: skip
        change()
        tree = store.snapshot().tree
        assert tree not in trees
        trees.add(tree)
    record = journal.finish(journal.begin("r0", "test"), "succeeded")
    assert record.changed == []
    journal.finish(journal.begin("r1", "test"), "succeeded")  # prunes r0
    assert not (store.state / "last-tree").exists()
    (project / "g.txt").write_text("three\n")
    record = journal.finish(journal.begin("r2", "test"), "succeeded")
    assert store.changes(record.before, record.after or "") == []


def test_a_bad_max_file_setting_is_a_usage_error_wherever_the_journal_walks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`wizard undo` and `apply` walk the project too, with no plan to check the variable
    first: `WIZARD_JOURNAL_MAX_FILE=ten` ended in a ValueError traceback."""
    project = tmp_path / "p"
    project.mkdir()
    monkeypatch.setenv("WIZARD_JOURNAL_MAX_FILE", "ten")
    with pytest.raises(UsageError, match="WIZARD_JOURNAL_MAX_FILE='ten' is not a number"):
        Journal(project, tmp_path / "state").begin("r1", "test")
