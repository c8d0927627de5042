"""What the journal cannot store is still seen and taken back: files edited in place in
dependency folders, repositories the agent planted, and names that are not UTF-8."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from wizard.journal import Journal, RunRecord
from wizard.names import shown

ODD = os.fsdecode(b"\xff\xfe.txt")


def _git(*args: str, cwd: Path) -> None:
    env = {"PATH": os.environ["PATH"], "HOME": str(cwd), "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """An app with installed dependencies: a package, a runner in `.bin`, a venv."""
    root = tmp_path / "project"
    pad = root / "node_modules" / "leftpad"
    pad.mkdir(parents=True)
    (pad / "index.js").write_text("module.exports = (s) => s;\n")
    jest = root / "node_modules" / "jest" / "bin"
    jest.mkdir(parents=True)
    (jest / "jest.js").write_text("#!/usr/bin/env node\nrun();\n")
    (root / "node_modules" / ".bin").mkdir()
    (root / "node_modules" / ".bin" / "jest").symlink_to("../jest/bin/jest.js")
    (root / ".venv" / "lib" / "site-packages").mkdir(parents=True)
    (root / "app.js").write_text("require('leftpad');\n")
    return root


def _journal(project: Path) -> Journal:
    return Journal(project, project.parent / "state")


def test_an_in_place_edit_of_a_dependency_is_seen_even_with_its_mtime_put_back(
    project: Path,
) -> None:
    journal = _journal(project)
    record = journal.begin("r1", "prog")
    target = project / "node_modules" / "leftpad" / "index.js"
    before = target.stat()
    with target.open("a") as handle:  # the payload, appended in place
        handle.write("require('child_process').exec('steal');\n")
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    (project / ".venv" / "lib" / "site-packages" / "evil.pth").write_text("import evil\n")
    (project / "node_modules" / ".bin" / "jest").unlink()
    (project / "node_modules" / ".bin" / "jest").write_text("#!/bin/sh\necho '1 passed'\n")
    finished = journal.finish(record, "succeeded")
    assert finished.dependency_changes == {
        ".venv/lib/site-packages/evil.pth": "added",
        "node_modules/.bin/jest": "changed",
        "node_modules/leftpad/index.js": "changed",
    }
    assert finished.changed == []  # no app file


def test_undo_removes_what_a_run_added_or_changed_in_dependency_folders_and_says_so(
    project: Path,
) -> None:
    journal = _journal(project)
    record = journal.begin("r1", "prog")
    with (project / "node_modules" / "leftpad" / "index.js").open("a") as handle:
        handle.write("payload();\n")
    (project / ".venv" / "lib" / "site-packages" / "evil.pth").write_text("import evil\n")
    (project / "node_modules" / "evil").mkdir()
    (project / "node_modules" / "evil" / "index.js").write_text("payload();\n")
    (project / "node_modules" / "jest" / "bin" / "jest.js").unlink()
    target = journal.finish(record, "succeeded")
    done = journal.undo(target, "u1")
    assert not (project / "node_modules" / "leftpad" / "index.js").exists()
    assert not (project / ".venv" / "lib" / "site-packages" / "evil.pth").exists()
    assert not (project / "node_modules" / "evil").exists()
    text = "\n".join(done.restored)
    assert "removed node_modules/evil (added by the run" in text
    assert "node_modules/evil/index.js" not in text  # named once, with its folder
    assert "cannot restore node_modules/jest/bin/jest.js" in text
    assert "reinstall" in text
    assert (project / "app.js").exists()


def test_undo_never_removes_through_a_folder_the_agent_turned_into_a_link(
    project: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    (outside / "leftpad").mkdir(parents=True)
    (outside / "leftpad" / "index.js").write_text("precious\n")
    journal = _journal(project)
    record = journal.begin("r1", "prog")
    with (project / "node_modules" / "leftpad" / "index.js").open("a") as handle:
        handle.write("payload();\n")
    target = journal.finish(record, "succeeded")
    # After the run, the folder on the way becomes a link out (a race the agent set up).
    os.rename(project / "node_modules", tmp_path / "moved")
    (project / "node_modules").symlink_to(outside)
    done = journal.undo(target, "u1", force=True)
    assert (outside / "leftpad" / "index.js").read_text() == "precious\n"
    assert any("no longer a folder" in line for line in done.restored)


@pytest.mark.parametrize("where", ["docs", "node_modules/x", "deep/er/assets"])
def test_a_repository_without_a_git_name_is_found_by_what_it_holds(
    project: Path, where: str
) -> None:
    """`git init --bare docs` with `core.worktree=..` and an fsmonitor: `git status` in
    `docs/` would run it as the user. It is a repository by its HEAD, objects/ and refs/,
    named as one and removed by undo; its files are not journaled as the app's."""
    _git("init", "-q", cwd=project)
    journal = _journal(project)
    record = journal.begin("r1", "prog")
    (project / where).parent.mkdir(parents=True, exist_ok=True)
    _git("init", "-q", "--bare", str(project / where), cwd=project)
    _git("config", "-f", str(project / where / "config"), "core.worktree", "..", cwd=project)
    _git("config", "-f", str(project / where / "config"), "core.fsmonitor", "touch pwned",
         cwd=project)  # fmt: skip
    (project / "docs-not-a-repo").mkdir()
    (project / "docs-not-a-repo" / "HEAD").write_text("a file named HEAD\n")
    target = journal.finish(record, "succeeded")
    assert target.repos_added == [where]
    assert not any(path.startswith(f"{where}/") for path in target.changed)
    assert "docs-not-a-repo/HEAD" in target.changed
    done = journal.undo(target, "u1")
    assert not (project / where).exists()
    assert any(f"removed {where}, a git repository" in line for line in done.restored)


@pytest.mark.parametrize("where", ["pkg", "node_modules/x", "deep/er/sub"])
def test_a_repository_planted_anywhere_is_named_and_undo_removes_it(
    project: Path, where: str
) -> None:
    _git("init", "-q", cwd=project)
    journal = _journal(project)
    record = journal.begin("r1", "prog")
    (project / where).mkdir(parents=True)
    _git("init", "-q", cwd=project / where)
    (project / where / ".git" / "config").write_text('[core]\n\tfsmonitor = "touch pwned"\n')
    target = journal.finish(record, "succeeded")
    assert target.repos_added == [f"{where}/.git"]
    done = journal.undo(target, "u1")
    assert not (project / where / ".git").exists()
    assert (project / ".git").is_dir()  # the user's own repository stays
    assert any(f"removed {where}/.git" in line for line in done.restored)


def test_a_gitfile_made_or_pointed_elsewhere_is_named_and_undo_puts_it_back(
    project: Path,
) -> None:
    (project / "sm").mkdir()
    (project / "sm" / ".git").write_text("gitdir: ../.git/modules/sm\n")
    journal = _journal(project)
    record = journal.begin("r1", "prog")
    (project / "sm" / ".git").write_text("gitdir: ../node_modules/x/evil\n")
    (project / "new").mkdir()
    (project / "new" / ".git").write_text("gitdir: ../node_modules/x/evil\n")
    target = journal.finish(record, "succeeded")
    assert target.repos_added == ["new/.git", "sm/.git"]
    journal.undo(target, "u1")
    assert (project / "sm" / ".git").read_text() == "gitdir: ../.git/modules/sm\n"
    assert not (project / "new" / ".git").exists()


def test_a_name_that_is_not_utf8_is_journaled_diffed_and_undone(project: Path) -> None:
    (project / "keep.txt").write_text("mine\n")
    journal = _journal(project)
    record = journal.begin("r1", "prog")
    (project / ODD).write_bytes(b"agent\n")
    (project / "keep.txt").write_text("rewritten\n")
    target = journal.finish(record, "succeeded")
    assert target.journal_error is None
    assert sorted(target.changed) == sorted([ODD, "keep.txt"])
    reread = journal.get("r1")
    assert isinstance(reread, RunRecord) and reread.changed == target.changed  # lossless
    assert "keep.txt" in journal.patch(target)
    journal.undo(target, "u1")
    assert not (project / ODD).exists()
    assert (project / "keep.txt").read_text() == "mine\n"


def test_any_failure_of_the_closing_snapshot_closes_the_record(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from wizard.errors import JournalError

    journal = _journal(project)
    record = journal.begin("r1", "prog")

    def broken(*args: object, **kwargs: object) -> object:
        raise UnicodeEncodeError("utf-8", "x", 0, 1, "surrogates not allowed")

    monkeypatch.setattr(journal.store, "snapshot", broken)
    with pytest.raises(JournalError):
        journal.finish(record, "succeeded")
    closed = journal.get("r1")
    assert closed is not None and closed.status == "succeeded" and closed.ended_at
    assert closed.journal_error and "surrogates" in closed.journal_error


@pytest.mark.parametrize(
    ("name", "printed"),
    [(ODD, "\\xff\\xfe.txt"), ("a\rb", "a\\rb"), ("x\x1b[2Jy", "x\\x1b[2Jy"), ("é.txt", "é.txt")],
)
def test_every_printed_name_is_escaped(name: str, printed: str) -> None:
    assert shown(name) == printed


def test_the_outcome_advises_safe_bare_repository_for_a_repository_found_by_its_shape(
    project: Path,
) -> None:
    """`safe.bareRepository=explicit` keeps git from using a folder by its shape: advised
    when such a repository appeared, not for a planted `.git` (which git uses either way)."""
    from wizard.launch import BARE_REPOSITORIES, with_journal
    from wizard.outcome import Outcome

    _git("init", "-q", cwd=project)
    journal = Journal(project)

    def plant(run_id: str, where: str, *init: str) -> tuple[str, ...]:
        record = journal.begin(run_id, "prog")
        (project / where).mkdir(parents=True)
        _git("init", "-q", *init, str(project / where), cwd=project)
        journal.finish(record, "succeeded")
        ended = with_journal(Outcome("succeeded", "prog", run_id=run_id), project)
        assert ended.repositories_added
        return ended.warnings

    assert BARE_REPOSITORIES in plant("r1", "docs", "--bare")
    assert BARE_REPOSITORIES not in plant("r2", "pkg")
