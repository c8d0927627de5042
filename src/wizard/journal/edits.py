"""What a run did to the project's files, from its journal: added, changed and removed
files (the app's and the installed skill's apart), lines added and removed, and, for files
that were there before the run, the lines each lost (so deleted configuration shows)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from wizard.journal.store import GitStore
from wizard.layout import SKILL_FILES


@dataclass(frozen=True)
class Edits:
    """One run's edits to the project, by file and by line."""

    added: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    skill_files: tuple[str, ...] = ()
    lines_added: int = 0
    lines_removed: int = 0
    # Lines removed from each file that existed before the run (binary files left out).
    removed_from_existing: Mapping[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary."""
        return asdict(self)


def edits_between(store: GitStore, before: str, after: str) -> Edits:
    """The edits from snapshot `before` to snapshot `after`."""
    changes = store.changes(before, after)
    app = [change for change in changes if not change.path.startswith(SKILL_FILES)]
    counts = store.line_counts(before, after) if app else {}  # a run that changed no app file
    lines = [counts.get(change.path) for change in app]
    existing = {
        change.path: removed
        for change in app
        if change.status != "A"
        and (count := counts.get(change.path)) is not None
        and (removed := count[1]) > 0
    }
    return Edits(
        added=tuple(c.path for c in app if c.status == "A"),
        changed=tuple(c.path for c in app if c.status not in ("A", "D")),
        removed=tuple(c.path for c in app if c.status == "D"),
        skill_files=tuple(c.path for c in changes if c.path.startswith(SKILL_FILES)),
        lines_added=sum(count[0] for count in lines if count is not None),
        lines_removed=sum(count[1] for count in lines if count is not None),
        removed_from_existing=dict(sorted(existing.items(), key=lambda item: -item[1])),
    )
