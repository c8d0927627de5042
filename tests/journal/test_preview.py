"""Previews in the journal: the copy, apply (conflicts, force, undo) and discard, pruning."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings

from tests.journal.test_journal import build, rebuild, trees
from tests.journal.trees import state
from wizard.errors import UsageError
from wizard.journal import ApplyRefused, Journal, prune_previews
from wizard.journal.project_copy import copy_project
from wizard.testing.trees import tree_fingerprint

Tree = list[tuple[str, str, bytes | str, int]]


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "p"
    (project / "src").mkdir(parents=True)
    (project / "src" / "app.py").write_text("print('v1')\n")
    (project / "run.sh").write_text("#!/bin/sh\n")
    (project / "run.sh").chmod(0o750)
    (project / "data.bin").write_bytes(bytes(range(256)))
    (project / "link").symlink_to("src/app.py")
    (project / ".env").write_text("SECRET=1\n")
    (project / "node_modules" / "pkg").mkdir(parents=True)
    (project / "node_modules" / "pkg" / "index.js").write_text("module.exports = 1\n")
    return project


def test_the_copy_keeps_content_modes_times_and_links_and_mounts_heavy_folders(
    tmp_path: Path,
) -> None:
    project = _project(tmp_path)
    os.link(project / ".env", project / "alias.txt")  # one inode, two names
    copy = copy_project(project, tmp_path / "copy")
    theirs, ours = tree_fingerprint(project, skip={"node_modules"}), tree_fingerprint(copy.root)
    assert {k: v for k, v in ours.items() if k != "node_modules"} == theirs
    assert copy.mounts == {"node_modules": str(project / "node_modules")}
    assert os.readlink(copy.root / "node_modules") == str(project / "node_modules")
    assert (copy.root / "alias.txt").stat().st_ino == (copy.root / ".env").stat().st_ino
    assert copy.cloned + copy.copied == 4  # app.py, run.sh, data.bin, .env; alias is a link


def _files(root: Path) -> dict[str, tuple[str, bytes | str, int]]:
    """`state(root)` but the dependency folder (a copy's mount, the project's own folder)."""
    return {k: v for k, v in state(root).items() if not k.startswith("node_modules")}


def _preview(journal: Journal, project: Path, run_id: str = "p1") -> Path:
    record = journal.begin_preview(run_id, "test")
    assert record.preview_dir is not None
    return Path(record.preview_dir)


def test_a_preview_changes_the_copy_and_never_the_project(tmp_path: Path) -> None:
    project = _project(tmp_path)
    before = tree_fingerprint(project)
    journal = Journal(project, tmp_path / "state")
    copy = _preview(journal, project)
    (copy / "src" / "app.py").write_text("print('v2')\n")
    (copy / "run.sh").unlink()
    (copy / "new.txt").write_text("new\n")
    finished = journal.finish(journal.get("p1"), "succeeded")  # type: ignore[arg-type]
    assert finished.changed == ["new.txt", "run.sh", "src/app.py"]
    assert finished.heavy_changed == []  # the mount is the same folder
    assert tree_fingerprint(project) == before
    assert "+print('v2')" in journal.patch(finished)


def test_apply_writes_the_preview_and_undo_takes_it_back(tmp_path: Path) -> None:
    project = _project(tmp_path)
    original = _files(project)
    journal = Journal(project, tmp_path / "state")
    copy = _preview(journal, project)
    (copy / "src" / "app.py").write_text("print('v2')\n")
    (copy / "src" / "app.py").chmod(0o600)
    (copy / "run.sh").unlink()
    (copy / "deep" / "er").mkdir(parents=True)
    (copy / "deep" / "er" / "new.txt").write_text("new\n")
    expected = _files(copy)
    preview = journal.finish(journal.get("p1"), "succeeded")  # type: ignore[arg-type]
    (project / "README").write_text("the user's, meanwhile\n")  # untouched by the preview
    done = journal.apply(preview, "a1")
    assert _files(project) == {**expected, "README": _files(project)["README"]}
    assert "wrote src/app.py" in done.restored and "removed run.sh" in done.restored
    assert not copy.exists()  # the copy goes once applied
    assert journal.get("p1").preview_state == "applied"  # type: ignore[union-attr]
    assert journal.find(None).run_id == "a1"  # the newest undoable run is the apply
    journal.undo(journal.find(None), "u1")
    assert _files(project) == {**original, "README": _files(project)["README"]}


def test_apply_refuses_a_file_changed_since_the_preview_started_unless_forced(
    tmp_path: Path,
) -> None:
    project = _project(tmp_path)
    journal = Journal(project, tmp_path / "state")
    copy = _preview(journal, project)
    (copy / "src" / "app.py").write_text("print('agent')\n")
    preview = journal.finish(journal.get("p1"), "succeeded")  # type: ignore[arg-type]
    (project / "src" / "app.py").write_text("print('user')\n")
    with pytest.raises(ApplyRefused) as refused:
        journal.apply(preview, "a1")
    assert "src/app.py" in refused.value.message and "--force" in (refused.value.hint or "")
    assert (project / "src" / "app.py").read_text() == "print('user')\n"
    assert journal.get("a1") is None  # the refused apply left no record
    journal.apply(preview, "a2", force=True)
    assert (project / "src" / "app.py").read_text() == "print('agent')\n"
    journal.undo(journal.find("a2"), "u1")  # the forced apply's undo brings the user's back
    assert (project / "src" / "app.py").read_text() == "print('user')\n"


@pytest.mark.parametrize("status", ["aborted", "unverified", "failed", "cancelled"])
def test_a_preview_that_did_not_succeed_is_applied_only_with_force(
    tmp_path: Path, status: str
) -> None:
    project = _project(tmp_path)
    journal = Journal(project, tmp_path / "state")
    copy = _preview(journal, project)
    (copy / "half.txt").write_text("half done\n")
    preview = journal.finish(journal.get("p1"), status)  # type: ignore[arg-type]
    with pytest.raises(ApplyRefused) as refused:
        journal.apply(preview, "a1")
    assert f"ended {status}" in refused.value.message
    assert not (project / "half.txt").exists()
    journal.apply(preview, "a2", force=True)
    assert (project / "half.txt").read_text() == "half done\n"


def test_discard_removes_the_copy_and_an_applied_or_discarded_preview_is_done(
    tmp_path: Path,
) -> None:
    project = _project(tmp_path)
    journal = Journal(project, tmp_path / "state")
    copy = _preview(journal, project)
    journal.finish(journal.get("p1"), "succeeded")  # type: ignore[arg-type]
    assert journal.pending_preview(None).run_id == "p1"
    journal.close_preview(journal.pending_preview("p1"), "discarded")
    assert not copy.exists() and journal.get("p1").preview_state == "discarded"  # type: ignore[union-attr]
    with pytest.raises(UsageError, match="was discarded"):
        journal.pending_preview("p1")
    with pytest.raises(UsageError, match="is a preview"):
        journal.undo(journal.find("p1", undoable=False), "u1")


def test_old_previews_are_pruned_and_recent_ones_kept(tmp_path: Path) -> None:
    root = tmp_path / "state"
    project = _project(tmp_path)
    journal = Journal(project, root)
    old, recent = _preview(journal, project, "old"), _preview(journal, project, "new")
    week_ago = time.time() - 8 * 86400
    os.utime(old.parent, (week_ago, week_ago))
    assert prune_previews(7 * 86400, root) == ["old"]
    assert not old.parent.exists() and recent.exists()
    assert journal.get("old").preview_state == "discarded"  # type: ignore[union-attr]


def _leaves(path: str, target: str) -> bool:
    return os.path.normpath(os.path.join(os.path.dirname(path), target)).startswith("..")


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(before=trees(), after=trees())
def test_apply_gives_the_tree_the_preview_left(
    tmp_path_factory: pytest.TempPathFactory, before: Tree, after: Tree
) -> None:
    # A link out of the project is never applied (its own test, below): the rest is exact.
    assume(
        not any(kind == "link" and _leaves(path, str(target)) for path, kind, target, _ in after)
    )
    project = tmp_path_factory.mktemp("project")
    build(project, before)
    journal = Journal(project, tmp_path_factory.mktemp("state"))
    copy = _preview(journal, project)
    rebuild(copy, after)
    expected = state(copy)
    preview = journal.finish(journal.get("p1"), "succeeded")  # type: ignore[arg-type]
    journal.apply(preview, "a1")
    assert state(project) == expected


def test_a_run_prunes_previews_older_than_wizard_preview_keep_days(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from wizard.runner.previewing import prune_expired_previews as prune_at_run_start

    monkeypatch.setenv("WIZARD_STATE_DIR", str(tmp_path / "state"))
    project = _project(tmp_path)
    copy = _preview(Journal(project), project, "p1")
    two_days_ago = time.time() - 2 * 86400
    os.utime(copy.parent, (two_days_ago, two_days_ago))
    notes: list[str] = []
    prune_at_run_start({"WIZARD_PREVIEW_KEEP": "3"}, notes.append)
    assert copy.exists() and notes == []
    prune_at_run_start({"WIZARD_PREVIEW_KEEP": "1.5"}, notes.append)
    assert not copy.exists() and notes == [
        "removed preview p1: older than 1.5 days (WIZARD_PREVIEW_KEEP)"
    ]


def test_setuid_setgid_and_sticky_bits_the_agent_set_are_never_written(tmp_path: Path) -> None:
    """An attack the suite did not have: a command of the agent sets setuid and setgid on
    files in the preview's copy, and `wizard apply` (as root, in CI) would write them into
    the project as wizard. Neither apply nor the undo of its undo writes them."""
    project = _project(tmp_path)
    journal = Journal(project, tmp_path / "state")
    copy = _preview(journal, project)
    (copy / "run.sh").chmod(0o6755)  # only the bits change
    (copy / "new.sh").write_text("id\n")
    (copy / "new.sh").chmod(0o4777)
    preview = journal.finish(journal.get("p1"), "succeeded")  # type: ignore[arg-type]
    journal.apply(preview, "a1")
    assert stat.S_IMODE((project / "run.sh").stat().st_mode) == 0o755
    assert stat.S_IMODE((project / "new.sh").stat().st_mode) == 0o777
    journal.undo(journal.find("a1"), "u1")
    journal.undo(journal.find("u1"), "u2")  # puts the apply's changes back
    assert stat.S_IMODE((project / "run.sh").stat().st_mode) == 0o755
    assert stat.S_IMODE((project / "new.sh").stat().st_mode) == 0o777


def test_apply_and_the_patch_never_carry_a_link_out_of_the_project(tmp_path: Path) -> None:
    project = _project(tmp_path)
    journal = Journal(project, tmp_path / "state")
    copy = _preview(journal, project)
    (copy / "keys").symlink_to(str(tmp_path / "home" / ".ssh" / "authorized_keys"))
    (copy / "src" / "up").symlink_to("../../outside")
    (copy / "src" / "near").symlink_to("app.py")
    preview = journal.finish(journal.get("p1"), "succeeded")  # type: ignore[arg-type]
    assert journal.links_out(preview) == {
        "keys": str(tmp_path / "home" / ".ssh" / "authorized_keys"),
        "src/up": "../../outside",
    }
    assert "src/near" in journal.patch(preview, paths=["src/near"])
    done = journal.apply(preview, "a1")
    assert os.readlink(project / "src" / "near") == "app.py"
    assert not os.path.lexists(project / "keys") and not os.path.lexists(project / "src" / "up")
    assert sum("leads out of the project" in line for line in done.restored) == 2


def test_a_preview_whose_run_is_going_is_never_pruned(tmp_path: Path) -> None:
    """A preview's record is written as its run starts; with `WIZARD_PREVIEW_KEEP=0` any
    other run (even one the lock then refused) deleted its copy while it ran."""
    from wizard.journal.lock import project_lock

    root = tmp_path / "state"
    project = _project(tmp_path)
    journal = Journal(project, root)
    running = _preview(journal, project, "running")
    with project_lock(project, "running", root=root):  # its run holds the lock
        assert prune_previews(0, root) == []
        assert running.exists() and journal.get("running").preview_state == "pending"  # type: ignore[union-attr]
        # The process that holds the lock knows no run of its own is going there.
        assert prune_previews(0, root, holding=project.resolve()) == ["running"]
    crashed = _preview(journal, project, "crashed")  # no lock: its process is gone
    assert prune_previews(0, root) == ["crashed"] and not crashed.exists()


async def test_a_run_the_lock_refuses_prunes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from wizard.journal.lock import ProjectLocked, project_lock
    from wizard.programs.registry import get_program
    from wizard.runner import RunFlags, plan_run, run_program

    monkeypatch.setenv("WIZARD_STATE_DIR", str(tmp_path / "state"))
    project = _project(tmp_path)
    journal = Journal(project)
    old = _preview(journal, project, "old")
    journal.finish(journal.get("old"), "succeeded")  # type: ignore[arg-type]
    flags = RunFlags(project=project, gateway_url="http://127.0.0.1:9")
    environ = {"WIZARD_PREVIEW_KEEP": "0", "WIZARD_SANDBOX": "off"}
    plan = plan_run(get_program("transactional-email"), flags, environ)
    with project_lock(project, "other"), pytest.raises(ProjectLocked):
        await run_program(plan, lambda event: None)
    assert old.exists(), "a refused run removed a preview"


def test_a_previews_links_to_the_projects_repositories_are_not_new_repositories(
    tmp_path: Path,
) -> None:
    """The copy shows the project's `.git` folders as links: they are the same repositories,
    not ones that appeared (every preview of a git project said so, in bold red)."""
    project = _project(tmp_path)
    for repo in (project, project / "src"):
        (repo / ".git").mkdir()
    journal = Journal(project, tmp_path / "state")
    copy = _preview(journal, project)
    (copy / "pkg" / ".git").mkdir(parents=True)  # one the agent makes
    preview = journal.finish(journal.get("p1"), "succeeded")  # type: ignore[arg-type]
    assert preview.repos_added == ["pkg/.git"]
