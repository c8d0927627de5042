"""The journal's part in a run: the project's files before it, and after it, whatever happens.

The journal must never change how a run ends: when git is missing or the journal cannot be
written, the run goes on with a warning that `wizard undo` cannot take it back.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wizard.errors import ConfigError, WizardError
from wizard.events import EventSink, LogLine
from wizard.journal import Journal, RunRecord, git_available
from wizard.runner.sequence.context import Binding
from wizard.tools.paths import is_env_name

_OFF = "this run is not journaled, so `wizard undo` cannot take it back"
NOT_JOURNALED = "Not journaled: undo is off for this run"


@dataclass
class RunJournal:
    """One run's journal record, or nothing when the journal is off."""

    sink: EventSink
    journal: Journal | None = None
    record: RunRecord | None = None
    # Why the run is not journaled, for the outcome's warnings; None when it is.
    warning: str | None = None

    @classmethod
    def open(
        cls, project: Path, run_id: str, program_id: str, binding: Binding, sink: EventSink
    ) -> RunJournal:
        """Snapshot the project before the run."""
        if not git_available():
            sink(LogLine(f"git was not found: {_OFF}. Install git to turn it on.", "warning"))
            return cls(sink, warning=f"{NOT_JOURNALED} (git was not found).")
        try:
            journal = Journal(project)
            record = journal.begin(run_id, program_id, binding.harness, binding.sequence)
        except (WizardError, OSError) as exc:
            sink(LogLine(f"the run journal failed ({exc}): {_OFF}.", "warning"))
            return cls(sink, warning=f"{NOT_JOURNALED} ({exc}).")
        return cls(sink, journal, record)

    @classmethod
    def open_preview(
        cls, project: Path, run_id: str, program_id: str, binding: Binding, sink: EventSink
    ) -> RunJournal:
        """Snapshot the project before a preview and make the copy it runs on. A preview
        without its journal could never be applied: a `ConfigError` naming the fix."""
        if not git_available():
            raise ConfigError(
                "A preview needs git, for its journal; git was not found.",
                "Install git, or run without --preview.",
            )
        journal = Journal(project)
        record = journal.begin_preview(run_id, program_id, binding.harness, binding.sequence)
        return cls(sink, journal, record)

    def abandon(self) -> None:
        """Forget a preview that never ran (its engine or sandbox could not start)."""
        if self.journal is not None and self.record is not None:
            self.journal.forget_preview(self.record)
            self.record = None

    def finish(
        self, status: str, error_type: str | None = None, record: RunRecord | None = None
    ) -> RunRecord | None:
        """Snapshot the project after the run (again, given its finished `record`); the
        finished record."""
        record = record or self.record
        if self.journal is None or record is None:
            return None
        try:
            return self.journal.finish(record, status, error_type)
        except (WizardError, OSError) as exc:
            self.sink(LogLine(f"the run journal failed ({exc}): {_OFF}.", "warning"))
            self.warning = f"{NOT_JOURNALED} ({exc})."
            return None

    def after_checks(
        self, record: RunRecord | None, status: str
    ) -> tuple[RunRecord | None, list[str]]:
        """Take the after-state again once checks ran in the project, so nothing they wrote
        escapes the journal; the record, and the paths the checks changed."""
        if self.journal is None or record is None or record.after is None:
            return record, []
        again = self.finish(status, record.error_type, record)
        if again is None:
            return record, []
        return again, self.journal.changed_between(record, again)

    def amend(self, record: RunRecord | None, **fields: Any) -> RunRecord | None:
        """Record more of the finished run: another status (its verification failed), what
        it used."""
        if self.journal is None or record is None:
            return record
        try:
            return self.journal.amend(record, **fields)
        except OSError as exc:
            self.sink(LogLine(f"the run journal failed ({exc})", "warning"))
            return record

    def materialiser(self, record: RunRecord | None) -> Callable[[Path], None]:
        """Writes the project as it was before the run into an empty folder, without its
        `.env*` files (a check has no business with secrets), and with a link to each of the
        project's dependency folders, which the journal does not copy: `tsc` and `npm test`
        need them. A check's sandbox reads them there and writes nothing through them."""

        def write(folder: Path) -> None:
            if self.journal is None or record is None:
                raise FileNotFoundError("the run is not journaled")
            self.journal.materialise(record.before, folder, is_env_name)
            for name in record.heavy_before:
                target, link = self.journal.project / name, folder / name
                if target.is_dir() and link.parent.is_dir() and not os.path.lexists(link):
                    link.symlink_to(target, target_is_directory=True)

        return write
