"""The journal never runs anything the project holds: repository config planted by an agent in
nested repositories and submodules stays inert, and such repositories are snapshotted (and
undone) as plain folders. Each trap's command would leave a marker file if it ever ran."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from wizard.journal import Journal
from wizard.journal.store import GitStore

EVIL_CONFIG = """[core]
\tfsmonitor = "{marker} fsmonitor"
\thooksPath = hooks
[filter "evil"]
\tclean = {marker} clean
\tsmudge = {marker} smudge
[diff "evil"]
\ttextconv = {marker} textconv
"""


def _git(*args: str, cwd: Path) -> None:
    env = {"PATH": os.environ["PATH"], "HOME": str(cwd), "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


@pytest.fixture
def trapped(tmp_path: Path) -> tuple[Path, Path]:
    """A project with an agent's traps: evil config in a nested repository two folders down,
    in a submodule's `.git/modules/<name>/config`, an empty nested repository, and
    `.gitattributes` naming the evil filter."""
    project, marker_dir = tmp_path / "project", tmp_path / "markers"
    project.mkdir()
    marker_dir.mkdir()
    script = tmp_path / "evil.sh"
    script.write_text(f'#!/bin/sh\necho "$@" >> {marker_dir}/ran\nenv >> {marker_dir}/env\n')
    script.chmod(0o755)
    config = EVIL_CONFIG.format(marker=script)
    (project / "app.py").write_text("print('app')\n")
    (project / ".gitattributes").write_text("* filter=evil diff=evil\n")
    _git("init", "-q", cwd=project)
    nested = project / "vendor" / "lib"
    nested.mkdir(parents=True)
    _git("init", "-q", cwd=nested)
    (nested / "lib.py").write_text("x = 1\n")
    (nested / ".git" / "config").write_text(config)
    (nested / ".git" / "hooks" / "post-index-change").write_text(f"#!/bin/sh\n{script} hook\n")
    (nested / ".git" / "hooks" / "post-index-change").chmod(0o755)
    modules = project / ".git" / "modules" / "sub"
    modules.mkdir(parents=True)
    (modules / "config").write_text(config)
    (project / "sub").mkdir()
    (project / "sub" / ".git").write_text("gitdir: ../.git/modules/sub\n")
    (project / "sub" / "mod.py").write_text("y = 2\n")
    (project / "scaffold").mkdir()
    _git("init", "-q", cwd=project / "scaffold")  # empty, as a scaffolder leaves it
    return project, marker_dir


def test_no_planted_config_runs_and_nested_repositories_are_plain_folders(
    trapped: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project, markers = trapped
    monkeypatch.setenv("WIZARD_GATEWAY_KEY", "sk-canary-journal")
    monkeypatch.setenv("GIT_DIR", str(project / ".git"))  # an outside GIT_* is ignored
    journal = Journal(project, tmp_path / "state")
    record = journal.begin("r1", "prog")
    (project / "vendor" / "lib" / "lib.py").write_text("x = 'agent'\n")
    (project / "scaffold" / "new.py").write_text("z = 3\n")
    finished = journal.finish(record, "succeeded")
    assert not (markers / "ran").exists(), (markers / "ran").read_text()
    assert finished.journal_error is None
    assert finished.changed == ["scaffold/new.py", "vendor/lib/lib.py"]
    diff = journal.patch(finished)
    assert "x = 'agent'" in diff
    undone = journal.undo(finished, "r2")
    assert (project / "vendor" / "lib" / "lib.py").read_text() == "x = 1\n"
    assert not (project / "scaffold" / "new.py").exists()
    assert "restored vendor/lib/lib.py" in undone.restored
    assert not (markers / "ran").exists()
    # The submodule's files are journaled too; no `.git` entry at any depth is.
    listing = journal.store._git("ls-tree", "-r", "--name-only", finished.before).decode()
    assert "sub/mod.py" in listing.splitlines()
    assert not any(".git/" in line or line.endswith(".git") for line in listing.splitlines())


def test_files_over_the_limit_are_fingerprinted_not_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "big.bin").write_bytes(b"x" * 5000)
    (project / "small.txt").write_text("s")
    monkeypatch.setenv("WIZARD_JOURNAL_MAX_FILE", "4096")
    journal = Journal(project, tmp_path / "state")
    record = journal.begin("r1", "prog")
    (project / "big.bin").write_bytes(b"y" * 6000)
    finished = journal.finish(record, "succeeded")
    assert finished.large_changed == ["big.bin"]
    assert "big.bin" not in finished.changed
    objects = (tmp_path / "state").rglob("objects/*/*")
    assert all(path.stat().st_size < 4096 for path in objects)


def test_a_snapshot_that_fails_closes_the_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "a.txt").write_text("a")
    journal = Journal(project, tmp_path / "state")
    record = journal.begin("r1", "prog")

    def broken(self: GitStore, *_: object, **__: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(GitStore, "snapshot", broken)
    with pytest.raises(OSError):
        journal.finish(record, "succeeded")
    closed = journal.get("r1")
    assert closed is not None and closed.status == "succeeded" and closed.ended_at
    assert closed.journal_error == "disk full"
