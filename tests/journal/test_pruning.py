"""Demo journals are pruned when their projects are gone, and only then; a project's pruned
runs are named as pruned."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from wizard.journal.pruning import prune_demo_journals


def _journal(root: Path, name: str, project: Path, age: int) -> Path:
    folder = root / "journal" / name
    folder.mkdir(parents=True)
    (folder / "project").write_text(str(project))
    os.utime(folder, (1_000_000 - age, 1_000_000 - age))
    return folder


def test_demo_journals_of_gone_projects_go_and_the_others_stay(tmp_path: Path) -> None:
    """A demo prints its Review and Undo commands: they work as long as its folder is there
    (the newest five used to be kept, so a sixth demo broke the first one's commands)."""
    state, temp = tmp_path / "state", tmp_path / "tmp"
    alive = []
    for n in range(8):
        project = temp / f"wizard-demo-{n}" / "sample-app"
        project.mkdir(parents=True)
        alive.append(_journal(state, f"alive{n}", project, age=n))
    gone = _journal(state, "gone", temp / "wizard-demo-x" / "sample-app", age=0)
    mine = tmp_path / "my-app"  # the user's own project: never pruned here, even when gone
    own = _journal(state, "own", mine, age=99)
    removed = prune_demo_journals(root=state)
    assert removed == [gone]
    assert all(folder.is_dir() for folder in alive) and own.is_dir()


def test_a_pruned_run_is_named_as_pruned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`wizard diff OLD` used to say the run was never journaled."""
    from wizard.errors import UsageError
    from wizard.journal.runs import Journal

    monkeypatch.setenv("WIZARD_JOURNAL_KEEP", "2")
    monkeypatch.setenv("WIZARD_STATE_DIR", str(tmp_path / "state"))
    project = tmp_path / "project"
    project.mkdir()
    journal = Journal(project)
    for n in range(3):
        (project / "app.py").write_text(f"x = {n}\n")
        journal.finish(journal.begin(f"run{n}aaaa", "prog"), "succeeded")
    journal.prune()
    assert [r.run_id for r in journal.records()] == ["run2aaaa", "run1aaaa"]
    pruned = r"run0aaaa of .* was journaled, and its record has since been pruned: the journal "
    with pytest.raises(UsageError, match=pruned + "keeps a project's newest 2 runs"):
        journal.find("run0")
    with pytest.raises(UsageError, match="No single journaled run"):
        journal.find("nothing")
