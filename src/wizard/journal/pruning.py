"""Pruning what would otherwise pile up in the state folder: the journals of demo projects
(about 250 KB each), the copies of previews never applied nor discarded, and the journals of
the projects wizard makes and removes itself (a fleet's workspaces).

`wizard demo` keeps each sample project in a `wizard-demo-*` temp folder for the user to look
at, and journals its run like any other. A demo journal whose project is gone serves nothing
and goes; one whose project is there stays. Journals of the user's own projects are never touched
here (their runs are pruned per project, `WIZARD_JOURNAL_KEEP`).
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from wizard.journal.lock import is_locked
from wizard.journal.runs import Journal
from wizard.layout import state_root
from wizard.walk import remove_tree

DEMO_PREFIX = "wizard-demo-"


def prune_demo_journals(root: Path | None = None) -> list[Path]:
    """Remove the journals of demo projects that are gone (a demo's journal lives as long as
    its folder does, so the Review and Undo commands it printed keep working); the journal
    folders removed."""
    removed = []
    for folder in ((root or state_root()) / "journal").glob("*"):
        try:
            project = Path((folder / "project").read_text().strip())
        except OSError:
            continue
        if project.parent.name.startswith(DEMO_PREFIX) and not project.is_dir():
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def prune_previews(
    max_age: float, root: Path | None = None, *, holding: Path | None = None
) -> list[str]:
    """Remove the copies of previews started more than `max_age` seconds ago, of every
    project; their records say they were discarded. Never a preview whose run may still be
    going: it has not ended, and its project's lock is held (but by this process, which
    holds the lock of the project `holding`, so no run of it is going). The ids of the
    previews removed."""
    removed = []
    now = time.time()
    for folder in ((root or state_root()) / "journal").glob("*/previews/*"):
        try:
            if now - folder.stat().st_mtime <= max_age:
                continue
            project = Path((folder.parent.parent / "project").read_text().strip())
        except OSError:
            continue
        journal = Journal(project, root)
        record = journal.get(folder.name) if journal.state == folder.parent.parent else None
        unended = record is None or record.ended_at is None
        if unended and project != holding and is_locked(project, root):
            continue  # its run is going: a record is written as it starts
        if record is not None and record.preview_state == "pending":
            journal.close_preview(record, "discarded")
        else:
            remove_tree(folder)
        removed.append(folder.name)
    return removed
