"""A preview's part in a run: where the agent works, the outro, and old copies pruned.

`wizard run --preview` runs the program on a private copy of the project (made by the journal,
`journal.project_copy`), so the project is untouched until `wizard apply`. Everything else about the
run is the same: the sandbox's writable root, the file tools and verification are the copy's.
The outcome is the run's own, said as a preview: nothing is "set up" until it is applied.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from wizard.config import number_setting
from wizard.journal import prune_previews
from wizard.outcome import Outcome, Outro
from wizard.runner.journaling import RunJournal

DEFAULT_KEEP_DAYS = 7.0
PREVIEW_NOTE = (
    "This was a preview: the agent worked on a private copy, and your project has not changed."
)


@dataclass(frozen=True)
class Workspace:
    """Where a run's agent works: the project itself, or a preview's copy of it."""

    project: Path
    root: Path
    # A copy's links to the project's own heavy folders, shown read-only: path → folder.
    mounts: Mapping[str, Path] = field(default_factory=dict)

    @property
    def preview(self) -> bool:
        """Whether the agent works on a copy."""
        return self.root != self.project

    @classmethod
    def of(cls, project: Path, journal: RunJournal | None) -> Workspace:
        """The project, or the copy of the preview `journal` opened."""
        record = journal.record if journal is not None else None
        if record is None or record.preview_dir is None:
            return cls(project, project)
        mounts = {path: Path(folder) for path, folder in record.mounts.items()}
        return cls(project, Path(record.preview_dir), mounts)


def as_preview(outcome: Outcome, label: str) -> Outcome:
    """The run's outcome, said as a preview's: a success says what applying it would do, and
    never that anything is set up; any other ending says the project is untouched."""
    outro = outcome.outro
    if outcome.status == "succeeded":
        body = f"{PREVIEW_NOTE} Review the change, then apply or discard it."
        if outro is not None and outro.body:
            body += f"\n\nIn the copy: {outro.body}"
        docs = outro.docs_url if outro is not None else None
        outro = Outro("success", f"Preview ready: {label}, not applied yet", body, docs)
    elif outro is not None:
        outro = replace(
            outro, body=f"{outro.body}\n\n{PREVIEW_NOTE}" if outro.body else PREVIEW_NOTE
        )
    return replace(outcome, outro=outro, preview=True)


def prune_expired_previews(
    environ: Mapping[str, str], note: Callable[[str], None], holding: Path | None = None
) -> None:
    """Remove the copies of previews older than `WIZARD_PREVIEW_KEEP` days (default 7), but
    those whose run is going; the caller holds the lock of the project `holding`."""
    days = number_setting(environ, "WIZARD_PREVIEW_KEEP", DEFAULT_KEEP_DAYS, float)
    for run_id in prune_previews(days * 86400, holding=holding):
        note(f"removed preview {run_id}: older than {days:g} days (WIZARD_PREVIEW_KEEP)")
