"""Pruning the journals of demo projects, which would otherwise pile up (about 250 KB each).

`wizard demo` keeps each sample project in a `wizard-demo-*` temp folder for the user to look
at, and journals its run like any other. A demo journal whose project is gone serves nothing;
of the rest, the newest few are kept. Journals of the user's own projects are never touched
here (their runs are pruned per project, `WIZARD_JOURNAL_KEEP`).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from wizard.config import state_root

DEMO_PREFIX = "wizard-demo-"


def prune_demo_journals(keep: int = 5, root: Path | None = None) -> list[Path]:
    """Remove the journals of demo projects that are gone, and all but the newest `keep` of
    the others; the journal folders removed."""
    demos: list[tuple[float, Path, bool]] = []
    for folder in ((root or state_root()) / "journal").glob("*"):
        try:
            project = Path((folder / "project").read_text().strip())
        except OSError:
            continue
        if project.parent.name.startswith(DEMO_PREFIX):
            demos.append((folder.stat().st_mtime, folder, project.is_dir()))
    demos.sort(reverse=True)
    kept = 0
    removed = []
    for _, folder, alive in demos:
        if alive and kept < keep:
            kept += 1
            continue
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed
