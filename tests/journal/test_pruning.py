"""Demo journals are pruned: gone projects' at once, the rest down to the newest few."""

from __future__ import annotations

import os
from pathlib import Path

from wizard.journal.pruning import prune_demo_journals


def _journal(root: Path, name: str, project: Path, age: int) -> Path:
    folder = root / "journal" / name
    folder.mkdir(parents=True)
    (folder / "project").write_text(str(project))
    os.utime(folder, (1_000_000 - age, 1_000_000 - age))
    return folder


def test_demo_journals_of_gone_projects_go_and_only_the_newest_stay(tmp_path: Path) -> None:
    state, temp = tmp_path / "state", tmp_path / "tmp"
    alive = []
    for n in range(4):
        project = temp / f"wizard-demo-{n}" / "sample-app"
        project.mkdir(parents=True)
        alive.append(_journal(state, f"alive{n}", project, age=n))
    gone = _journal(state, "gone", temp / "wizard-demo-x" / "sample-app", age=0)
    mine = tmp_path / "my-app"  # the user's own project: never pruned here, even when gone
    own = _journal(state, "own", mine, age=99)
    removed = prune_demo_journals(keep=2, root=state)
    assert sorted(removed) == sorted([gone, alive[2], alive[3]])
    assert alive[0].is_dir() and alive[1].is_dir() and own.is_dir()
