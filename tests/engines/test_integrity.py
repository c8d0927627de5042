"""An installed engine is the one installed: any change to its tree is found and refused."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from wizard.engines import integrity
from wizard.engines.bundle import check_unchanged
from wizard.engines.integrity import (
    file_matches_record,
    make_read_only,
    make_writable,
    record_tree,
    tree_changes,
)
from wizard.errors import EngineChanged


@pytest.fixture
def engine_tree(tmp_path: Path) -> Path:
    root = tmp_path / "engine"
    (root / "node_modules" / "photon").mkdir(parents=True)
    (root / "node_modules" / "photon" / "index.js").write_text("module.exports = 1;\n")
    (root / "host.mjs").write_text("// host\n")
    return root


def test_a_change_that_keeps_size_and_mtime_is_still_found(engine_tree: Path, tmp_path: Path):
    record = tmp_path / "state" / "engine.json"
    make_read_only(engine_tree)
    record_tree(engine_tree, record)
    assert tree_changes(engine_tree, record) == []
    target = engine_tree / "node_modules" / "photon" / "index.js"
    info = target.stat()
    target.chmod(0o644)
    target.write_text("module.exports = 2;\n")  # same size
    os.utime(target, ns=(info.st_atime_ns, info.st_mtime_ns))  # same mtime
    target.chmod(stat.S_IMODE(info.st_mode))
    assert tree_changes(engine_tree, record) == ["node_modules/photon/index.js"]


def test_added_and_removed_files_are_found(engine_tree: Path, tmp_path: Path) -> None:
    record = tmp_path / "engine.json"
    record_tree(engine_tree, record)
    (engine_tree / "host.mjs").unlink()
    (engine_tree / "node_modules" / "evil.js").write_text("pwn()")
    changed = [".", "host.mjs", "node_modules", "node_modules/evil.js"]
    assert tree_changes(engine_tree, record) == changed
    assert tree_changes(engine_tree, tmp_path / "missing.json") is None


def _by_entry(record: Path) -> bool:
    return json.loads(record.read_bytes().partition(b"\n")[0])["by_entry"]


def test_a_quiet_tree_is_checked_entry_by_entry_and_still_finds_every_change(
    engine_tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = tmp_path / "engine.record"
    record_tree(engine_tree, record)
    assert not _by_entry(record)  # its folders changed a moment ago: a full walk each time
    monkeypatch.setattr(integrity, "_RACY_NS", 0)  # as if they had changed long before
    record_tree(engine_tree, record)
    assert _by_entry(record)
    with monkeypatch.context() as listing:  # unchanged: no folder is listed
        listing.setattr(integrity, "walk", lambda *_: pytest.fail("listed a folder"))
        assert tree_changes(engine_tree, record) == []
    (engine_tree / "node_modules" / "photon" / "evil.js").write_text("pwn()")
    assert tree_changes(engine_tree, record) == [
        "node_modules/photon",
        "node_modules/photon/evil.js",
    ]
    (engine_tree / "node_modules" / "photon" / "evil.js").unlink()
    assert tree_changes(engine_tree, record) == ["node_modules/photon"]  # its times moved on
    record_tree(engine_tree, record)
    (engine_tree / "top.js").write_text("pwn()")  # beside the recorded entries, in the root
    assert tree_changes(engine_tree, record) == [".", "top.js"]


def _first_format(entries: dict[str, list[int]]) -> bytes:
    """A record as wizard wrote it first: one JSON object of lists, the root not in it."""
    return json.dumps({path: fp for path, fp in entries.items() if path}).encode()


def _second_format(entries: dict[str, list[int]]) -> bytes:
    """A record of the second format: a header, then paths and fingerprints as text."""
    body = "\0".join(f"{path}\0{' '.join(map(str, fp))}" for path, fp in entries.items())
    return f'{{"format": 2, "by_entry": true}}\n{body}'.encode()


@pytest.mark.parametrize("written", [_first_format, _second_format])
def test_a_record_of_an_older_format_is_checked_by_a_full_walk_then_rewritten(
    engine_tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    written: Callable[[dict[str, list[int]]], bytes],
) -> None:  # fmt: skip
    record = tmp_path / "engine.json"

    def old() -> bytes:  # the tree as it is now, in the older format
        entries = {"": engine_tree.lstat(), **{p.relative_to(engine_tree).as_posix(): p.lstat()
                                               for p in engine_tree.rglob("*")}}  # fmt: skip
        return written({path: [info.st_mode, info.st_size, info.st_mtime_ns, info.st_ctime_ns,
                               info.st_ino] for path, info in entries.items()})  # fmt: skip

    record.write_bytes(before := old())
    (engine_tree / "extra.js").write_text("pwn()")
    changed = tree_changes(engine_tree, record)
    assert changed is not None and "extra.js" in changed
    assert record.read_bytes() == before  # a changed tree's record stays as it was
    (engine_tree / "extra.js").unlink()
    record.write_bytes(old())
    monkeypatch.setattr(integrity, "_RACY_NS", 0)
    walked: list[Path] = []
    monkeypatch.setattr(integrity, "tree_fingerprints", _counted(walked))
    assert tree_changes(engine_tree, record) == []
    assert walked and _by_entry(record)  # a full walk, then rewritten with the root's stamp
    assert tree_changes(engine_tree, record) == [] and len(walked) == 1  # by entry from now
    (engine_tree / "extra.js").write_text("pwn()")
    assert tree_changes(engine_tree, record) == [".", "extra.js"]


def _counted(walked: list[Path]) -> Callable[[Path], dict[str, bytes]]:
    walk = integrity.tree_fingerprints

    def counted(root: Path) -> dict[str, bytes]:
        walked.append(root)
        return walk(root)

    return counted


def test_the_tree_is_made_read_only_and_can_be_made_removable(engine_tree: Path) -> None:
    make_read_only(engine_tree)
    assert not any(p.stat().st_mode & 0o222 for p in [engine_tree, *engine_tree.rglob("*")])
    make_writable(engine_tree)
    assert all(
        p.stat().st_mode & 0o200 for p in [engine_tree, *engine_tree.rglob("*")] if p.is_dir()
    )


def test_a_changed_engine_is_refused_with_the_reinstall_command(
    engine_tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WIZARD_STATE_DIR", str(tmp_path / "state"))
    notes: list[str] = []
    check_unchanged(engine_tree, notes.append)  # first use: recorded
    assert notes and "recorded" in notes[0]
    check_unchanged(engine_tree)  # unchanged: fine
    make_writable(engine_tree)
    (engine_tree / "host.mjs").chmod(0o644)
    (engine_tree / "host.mjs").write_text("// rewritten by an agent\n")
    with pytest.raises(EngineChanged) as raised:
        check_unchanged(engine_tree)
    assert "host.mjs" in raised.value.message
    assert raised.value.hint == "Reinstall it: `wizard engines install pi`."


def test_a_bundled_cli_is_checked_against_its_wheel_record(tmp_path: Path) -> None:
    cli = tmp_path / "claude"
    cli.write_bytes(b"#!/bin/sh\necho claude\n")
    digest = base64.urlsafe_b64encode(hashlib.sha256(cli.read_bytes()).digest()).decode()
    cache = tmp_path / "cache.json"
    assert file_matches_record(cli, digest.rstrip("="), cache)
    assert file_matches_record(cli, digest.rstrip("="), cache)  # from the stat cache
    cli.write_bytes(b"#!/bin/sh\nexfiltrate\n")
    assert not file_matches_record(cli, digest.rstrip("="), cache)


def test_two_engine_folders_with_trees_of_one_name_each_keep_their_own_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The record was keyed by the tree's name: an install into `WIZARD_ENGINES_DIR=elsewhere`
    made every run on the default engine fail as "changed"."""
    monkeypatch.setenv("WIZARD_STATE_DIR", str(tmp_path / "state"))
    first, second = tmp_path / "a" / "pi-1+srt-1", tmp_path / "b" / "pi-1+srt-1"
    for root, text in ((first, "// one\n"), (second, "// another install\n")):
        root.mkdir(parents=True)
        (root / "host.mjs").write_text(text)
        check_unchanged(root)  # recorded on first sight
    check_unchanged(first)
    check_unchanged(second)
    make_writable(first)
    (first / "host.mjs").write_text("// changed\n")
    with pytest.raises(EngineChanged, match=r"host\.mjs"):
        check_unchanged(first)
    check_unchanged(second)


def _runtime_tree(root: Path) -> None:
    """A small engine tree: the sandbox runtime, a dependency of its own inside it, one it
    finds at the top, and pi beside them."""
    packages = {
        "node_modules/@anthropic-ai/sandbox-runtime": {"dependencies": {"zod": "3", "forge": "1"}},
        "node_modules/@anthropic-ai/sandbox-runtime/node_modules/zod": {},
        "node_modules/forge": {"peerDependencies": {"not-installed": "1"}},
        "node_modules/zod": {},  # another zod, pi's: the runtime's own is found first
        "node_modules/@mariozechner/pi-coding-agent": {"dependencies": {"zod": "4"}},
    }
    for folder, manifest in packages.items():
        (root / folder).mkdir(parents=True)
        (root / folder / "package.json").write_text(json.dumps(manifest))
        (root / folder / "index.js").write_text("module.exports = 1;\n")


def test_the_runtime_s_check_covers_its_packages_and_the_folders_above_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The anthropic harness checks only what the sandbox runtime runs: a change in pi's
    package is not its concern, a change in the runtime, in a package it depends on or in a
    folder above one is (an added package there would be found before the recorded one)."""
    from wizard.engines.bundle import runtime_folders

    root = tmp_path / "engine"
    _runtime_tree(root)
    assert sorted(runtime_folders(root)) == [
        "node_modules/@anthropic-ai/sandbox-runtime",
        "node_modules/@anthropic-ai/sandbox-runtime/node_modules/zod",
        "node_modules/forge",
    ]
    monkeypatch.setattr(integrity, "_RACY_NS", 0)  # checked entry by entry, as installed
    record = tmp_path / "engine.record"
    record_tree(root, record)
    within = runtime_folders(root)
    (root / "node_modules/@mariozechner/pi-coding-agent/index.js").write_text("pwn()")
    (root / "node_modules/zod/index.js").write_text("pwn()")
    assert tree_changes(root, record, within) == []
    assert tree_changes(root, record) == [
        "node_modules/@mariozechner/pi-coding-agent/index.js",
        "node_modules/zod/index.js",
    ]
    record_tree(root, record)
    (root / "node_modules/forge/index.js").write_text("pwn()")
    assert tree_changes(root, record, within) == ["node_modules/forge/index.js"]
    record_tree(root, record)
    (root / "node_modules/@anthropic-ai/sandbox-runtime/node_modules/zod/evil.js").write_text("")
    assert tree_changes(root, record, within) == [
        "node_modules/@anthropic-ai/sandbox-runtime/node_modules/zod",
        "node_modules/@anthropic-ai/sandbox-runtime/node_modules/zod/evil.js",
    ]
    record_tree(root, record)
    # Found where the runtime would look for a package before the top folder: the folder
    # above it is named.
    (root / "node_modules/@anthropic-ai/node_modules/commander").mkdir(parents=True)
    assert tree_changes(root, record, within) == ["node_modules/@anthropic-ai"]


def test_a_runtime_manifest_that_cannot_be_read_is_a_changed_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WIZARD_STATE_DIR", str(tmp_path / "state"))
    root = tmp_path / "engine"
    _runtime_tree(root)
    check_unchanged(root, runtime_only=True)  # first use: recorded
    check_unchanged(root, runtime_only=True)
    (root / "node_modules/forge/package.json").write_text("{not json")
    with pytest.raises(EngineChanged) as raised:
        check_unchanged(root, runtime_only=True)
    assert "node_modules/forge/package.json" in raised.value.message
