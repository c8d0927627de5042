"""The runs of a project: each one's before and after, and undoing one, byte for byte.

A record per run sits in wizard's state folder (`$WIZARD_STATE_DIR`, else
`$XDG_STATE_HOME/wizard`, else `~/.local/state/wizard`), under a folder per project. An undo is
recorded like a run (kind `undo`), so it can be undone too. A preview (kind `preview`) is a
run on a copy of the project (`project_copy`): its after-snapshot is the copy's, and applying
it writes that into the project as a run of its own (`applies`), which undo takes back. The
newest `WIZARD_JOURNAL_KEEP` records of a project (default 20) are kept; older ones are
dropped with their objects.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from wizard.atomic import write_atomically
from wizard.errors import ConfigError, JournalError, UsageError
from wizard.journal.dependencies import dependency_changes, prune_listings
from wizard.journal.edits import Edits, edits_between
from wizard.journal.leftovers import remove_unjournaled
from wizard.journal.project_copy import copy_project
from wizard.journal.refusals import ApplyRefused, UndoRefused
from wizard.journal.store import PLAIN_BITS, Change, GitStore, Snapshot, Walked
from wizard.layout import state_root
from wizard.listings import FolderListing
from wizard.walk import remove_tree

DEFAULT_KEEP = 20
# The ids of pruned runs, so a command naming one says it was pruned, not that it never was.
PRUNED_FILE = "pruned.json"
MAX_PRUNED_NOTED = 1000


class RunRecord(BaseModel):
    """One journaled run (or undo) of a project."""

    model_config = ConfigDict(extra="ignore")

    run_id: str
    # A preview works on a copy (`preview_dir`) and changes the project only when applied.
    kind: Literal["run", "undo", "preview"] = "run"
    program: str
    harness: str | None = None
    sequence: str | None = None
    started_at: str
    ended_at: str | None = None
    status: str | None = None
    before: str
    after: str | None = None
    before_modes: dict[str, int] = {}
    after_modes: dict[str, int] = {}
    changed: list[str] = []
    # Dependency and build folders, by the digest of their files' metadata (an older record:
    # the folder's mtime); the folders that changed, and each file in them that did.
    heavy_before: dict[str, int | str] = {}
    heavy_after: dict[str, int | str] = {}
    heavy_changed: list[str] = []
    dependency_changes: dict[str, str] = {}
    # Every `.git` before the run (`Snapshot.repos`), and those that appeared or changed
    # during it (a gitfile pointed elsewhere).
    repos_before: dict[str, str] = {}
    repos_added: list[str] = []
    # Files over the journal's size limit: fingerprinted, not stored, so undo leaves them.
    large_before: dict[str, str] = {}
    large_changed: list[str] = []
    # Why the after-run snapshot could not be taken: this run cannot be undone.
    journal_error: str | None = None
    # What the run used (`outcome.Usage` as a dict): `wizard runs` shows its cost and time.
    usage: dict[str, Any] | None = None
    # How a run that did not succeed ended (`WIZARD_API_ERROR`...): can it be resumed?
    error_type: str | None = None
    undoes: str | None = None
    undone_by: str | None = None
    # A preview: its copy, the copy's read-only links to heavy folders, and what became of it.
    preview_dir: str | None = None
    mounts: dict[str, str] = {}
    preview_state: Literal["pending", "applied", "discarded"] | None = None
    applied_by: str | None = None
    # A run that applied a preview: that preview's id.
    applies: str | None = None


@dataclass(frozen=True)
class Undone:
    """What an undo (or an apply) did: its record, and a line per file it wrote or removed."""

    record: RunRecord
    restored: list[str]


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


class Journal:
    """The journal of one project."""

    def __init__(self, project: Path, root: Path | None = None) -> None:
        self.project = project.resolve()
        key = hashlib.sha256(str(self.project).encode()).hexdigest()[:16]
        self.state = (root or state_root()) / "journal" / key
        self.store = GitStore(self.project, self.state)
        self.runs_dir = self.state / "runs"

    # --- recording ------------------------------------------------------------------------

    def begin(
        self,
        run_id: str,
        program: str,
        harness: str | None = None,
        sequence: str | None = None,
        *,
        undoes: str | None = None,
        applies: str | None = None,
        ahead: Callable[[], Sequence[FolderListing]] = tuple,
    ) -> RunRecord:
        """Snapshot the project before a run (or before undoing the run `undoes`, or applying
        the preview `applies`), with its dependency folders' listings taken `ahead` of it
        (asked for once the rest is walked: they may still be being taken)."""
        snapshot = self.store.snapshot(listed=lambda: self.store.kept(ahead()))
        self.store.keep(f"{run_id}/before", snapshot.tree)
        record = RunRecord(
            run_id=run_id, kind="undo" if undoes else "run", undoes=undoes, applies=applies,
            program=program, harness=harness, sequence=sequence, started_at=_now(),
            before=snapshot.tree, before_modes=snapshot.modes, heavy_before=dict(snapshot.heavy),
            large_before=snapshot.large, repos_before=snapshot.repos,
        )  # fmt: skip
        (self.state / "project").write_text(str(self.project))
        self._save(record)
        return record

    def begin_preview(
        self,
        run_id: str,
        program: str,
        harness: str | None = None,
        sequence: str | None = None,
        ahead: Callable[[], Sequence[FolderListing]] = tuple,
    ) -> RunRecord:
        """Snapshot the project before a preview (`begin`), and make the preview's copy of
        it."""
        record = self.begin(run_id, program, harness, sequence, ahead=ahead)
        folder = self._preview_folder(run_id)
        try:
            copy = copy_project(self.project, folder / "project")
        except BaseException as exc:  # a half copy is never left behind, even on Ctrl-C
            remove_tree(folder)
            self._discard(record)
            if not isinstance(exc, OSError):
                raise
            raise ConfigError(
                f"The preview's copy of {self.project} could not be made: {exc}",
                f"It goes in {folder}: free space there (or set WIZARD_STATE_DIR), then run again.",
            ) from exc
        update = {"kind": "preview", "preview_dir": str(copy.root), "mounts": copy.mounts,
                  "preview_state": "pending"}  # fmt: skip
        preview = record.model_copy(update=update)
        self._save(preview)
        return preview

    def finish(
        self,
        record: RunRecord,
        status: str,
        error_type: str | None = None,
        ahead: Callable[[], Walked | None] | None = None,
    ) -> RunRecord:
        """Snapshot the project after a run, whatever its outcome; prune old records. Called
        again on a finished record (checks ran in the project since), it takes the
        after-state anew. `ahead`: the project's walk, if one was taken since nothing of the
        run's could change it any more (`GitStore.walk`; asked for once the snapshot begins).

        A snapshot that fails, whatever the reason, still closes the record, with the reason:
        the run is not undoable, and `wizard runs` says it ended (an error other than an
        `OSError` or wizard's own is raised as a `JournalError`)."""
        ended = {"ended_at": record.ended_at or _now(), "status": status, "error_type": error_type}
        try:
            finished = self._closed(record, ended, ahead)
        except Exception as exc:  # any failure: the record still says the run ended
            self._save(record.model_copy(update={**ended, "journal_error": str(exc)}))
            if isinstance(exc, OSError | ConfigError):
                raise
            raise JournalError(f"{type(exc).__name__}: {exc}") from exc
        self._save(finished)
        self.prune()
        return finished

    def _closed(
        self, record: RunRecord, ended: dict[str, Any], ahead: Callable[[], Walked | None] | None
    ) -> RunRecord:
        """The record with the project's after-state (a preview: its copy's)."""
        if record.preview_dir:
            copy = Path(record.preview_dir)
            snapshot = self.store.snapshot(copy, record.mounts)
        else:
            snapshot = self.store.snapshot(ahead=None if ahead is None else ahead())
        self.store.keep(f"{record.run_id}/after", snapshot.tree)
        changes = self.store.changes(record.before, snapshot.tree)
        deps = dependency_changes(self.state, record.heavy_before, snapshot.heavy)
        # A folder there before and after whose listing's digest changed but none of its
        # entries did (listed in another format, before an upgrade, by a run resumed since)
        # did not change.
        both = record.heavy_before.keys() & snapshot.heavy.keys()
        heavy = [
            folder
            for folder in _differing(record.heavy_before, snapshot.heavy)
            if folder not in both
            or any(path == folder or path.startswith(f"{folder}/") for path in deps)
        ]
        return record.model_copy(
            update={
                **ended,
                "after": snapshot.tree,
                "after_modes": snapshot.modes,
                "changed": _changed_paths(changes, record.before_modes, snapshot.modes),
                "heavy_after": dict(snapshot.heavy),
                "heavy_changed": heavy,
                "dependency_changes": deps,
                "large_changed": _differing(record.large_before, snapshot.large),
                "repos_added": _differing(record.repos_before, snapshot.repos, only_after=True),
            }
        )

    def changed_between(self, first: RunRecord, then: RunRecord) -> list[str]:
        """What changed from one after-state of a run to a later one: files, dependency
        files, repositories."""
        assert first.after is not None and then.after is not None
        paths = {change.path for change in self.store.changes(first.after, then.after)}
        paths |= set(_changed_paths([], first.after_modes, then.after_modes))
        deps = first.dependency_changes
        paths |= {p for p, c in then.dependency_changes.items() if deps.get(p) != c}
        paths |= set(then.repos_added) - set(first.repos_added)
        return sorted(paths)

    def contents_before(
        self, record: RunRecord, since: RunRecord | None = None
    ) -> dict[str, bytes | None]:
        """Each file a finished run changed, with its content before the run (before `since`,
        an earlier run it carried on); None for one the run added. A link's content is its
        target's name."""
        if record.after is None:
            return {}
        changes = self.store.changes((since or record).before, record.after)
        stored = self.store.blobs(c.old_blob for c in changes if c.status != "A")
        return {c.path: None if c.status == "A" else stored.get(c.old_blob, b"")
                for c in changes}  # fmt: skip

    def edits(self, record: RunRecord) -> Edits | None:
        """What a finished run did to the project's files; None if it has no after-state."""
        if record.after is None:
            return None
        return edits_between(self.store, record.before, record.after)

    def amend(self, record: RunRecord, **fields: Any) -> RunRecord:
        """The finished `record` with `fields` changed (a status verification changed, what
        the run used), saved."""
        amended = record.model_copy(update=fields)
        self._save(amended)
        return amended

    def materialise(self, tree: str, dest: Path, leave_out: Callable[[str], bool]) -> None:
        """The project as the snapshot `tree` held it, written into the empty folder `dest`,
        without the files whose name `leave_out` says."""
        self.store.export(tree, dest, leave_out)

    def _save(self, record: RunRecord) -> None:
        """Write the record; a name that is not UTF-8 (a path is bytes to the system) is kept
        losslessly, as its escaped surrogates."""
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        path = self.runs_dir / f"{record.run_id}.json"
        write_atomically(path, json.dumps(record.model_dump(), indent=1).encode())

    # --- reading --------------------------------------------------------------------------

    def records(self) -> list[RunRecord]:
        """Every kept record that can be read, newest first."""
        return self.read_records()[0]

    def read_records(self) -> tuple[list[RunRecord], list[tuple[Path, str]]]:
        """Every kept record that can be read, newest first; and each that cannot (cut short,
        edited by hand, written by another version), with why."""
        if not self.runs_dir.is_dir():
            return [], []
        records, unreadable = [], []
        for path in sorted(self.runs_dir.glob("*.json")):
            try:
                records.append(_load(path))
            except (OSError, ValueError) as error:  # pydantic's ValidationError is one
                unreadable.append((path, str(error).splitlines()[0]))
        records.sort(key=lambda r: (r.started_at, r.run_id), reverse=True)
        return records, unreadable

    def get(self, run_id: str) -> RunRecord | None:
        """The record of exactly `run_id`, if the journal has it."""
        path = self.runs_dir / f"{run_id}.json"
        return _load(path) if path.is_file() else None

    def find(self, run_id: str | None, *, undoable: bool = True) -> RunRecord:
        """The record `run_id` (or an unambiguous prefix of it), else the newest finished one:
        with `undoable`, the newest run (never an undo) whose changes are still in place. So a
        second `wizard undo` takes back the run before, and never re-applies one: that is
        `wizard undo UNDO-ID`, named."""
        records = [r for r in self.records() if r.after is not None]
        if run_id is None:
            if undoable:
                records = [
                    r for r in records if r.kind == "run" and r.undone_by is None and r.changed
                ]
            if not records:
                left = " with changes left to undo" if undoable else ""
                raise UsageError(
                    f"No journaled run of {self.project}{left}.",
                    "`wizard runs --project DIR` lists the journaled runs of a project.",
                )
            return records[0]
        matches = [r for r in records if r.run_id.startswith(run_id)]
        if len(matches) != 1:
            pruned = [old for old in self.pruned() if old.startswith(run_id)]
            if not matches and len(pruned) == 1:
                raise UsageError(
                    f"The run {pruned[0]} of {self.project} was journaled, and its record has "
                    "since been pruned: the journal keeps a project's newest "
                    f"{journal_keep(os.environ)} runs.",
                    "Set WIZARD_JOURNAL_KEEP to keep more; `wizard runs --project DIR` lists "
                    "those it has.",
                )
            raise UsageError(
                f"No single journaled run of {self.project} has the id '{run_id}'.",
                "`wizard runs --project DIR` lists them.",
            )
        return matches[0]

    def pruned(self) -> list[str]:
        """The ids of the runs whose records were pruned, newest last."""
        try:
            data = json.loads((self.state / PRUNED_FILE).read_text())
        except (OSError, ValueError):
            return []
        return [str(run_id) for run_id in data] if isinstance(data, list) else []

    def links_out(self, record: RunRecord) -> dict[str, str]:
        """The links the run left (of those it changed) that lead out of the project."""
        assert record.after is not None
        return {p: t for p, t in self.store.links_out(record.after).items() if p in record.changed}

    def patch(
        self, record: RunRecord, *, stat: bool = False, paths: list[str] | None = None
    ) -> str:
        """What the run changed, as a unified diff `git apply` takes (or its `--stat`); only
        of `paths` when given."""
        assert record.after is not None
        if stat:
            return self.store.stat(record.before, record.after)
        if paths is not None and not paths:
            return ""
        return self.store.patch(record.before, record.after, paths)

    # --- undoing and applying ---------------------------------------------------------------

    def undo(self, target: RunRecord, run_id: str, *, force: bool = False) -> Undone:
        """Put every file `target` changed back as it was before it; journaled as a run."""
        assert target.after is not None
        if target.kind == "preview":
            raise UsageError(
                f"Run {target.run_id} is a preview: it never changed the project.",
                f"`wizard discard {target.run_id}` removes it"
                + (f"; the run that applied it is {target.applied_by}." if target.applied_by
                   else f", `wizard apply {target.run_id}` applies it."),
            )  # fmt: skip
        record = self.begin(
            run_id, target.program, target.harness, target.sequence, undoes=target.run_id
        )
        now = Snapshot(record.before, record.before_modes)
        later = self._changed_since(target, now)
        if later and not force:
            self._discard(record)
            raise UndoRefused(target.run_id, later)
        changes = self.store.changes(target.before, target.after)
        restored = self.store.restore(changes, Snapshot(target.before, target.before_modes))
        restored += self._restore_modes(target.changed, target.before_modes, changes)
        restored += remove_unjournaled(
            self.project, target.repos_added, target.repos_before, target.dependency_changes
        )
        finished = self.finish(record, "succeeded")
        self._save(target.model_copy(update={"undone_by": run_id}))
        if target.kind == "undo" and (original := self.get(target.undoes or "")) is not None:
            # Undoing an undo puts that run's changes back: it is no longer undone.
            self._save(original.model_copy(update={"undone_by": None}))
        return Undone(finished, restored)

    def apply(self, preview: RunRecord, run_id: str, *, force: bool = False) -> Undone:
        """Write what the preview changed into the project, journaled as the run `run_id`.

        Refused (`ApplyRefused`, nothing touched) when a file the preview changed changed in
        the project since the preview started, unless `force`. Each file is written as the
        preview left it, atomically and with its mode; files it removed are removed."""
        assert preview.after is not None and preview.kind == "preview"
        if preview.status != "succeeded" and not force:
            raise ApplyRefused.ended(preview.run_id, preview.status)
        record = self.begin(
            run_id, preview.program, preview.harness, preview.sequence, applies=preview.run_id
        )
        since = self.store.changes(preview.before, record.before)
        moved = set(_changed_paths(since, preview.before_modes, record.before_modes))
        if (clashes := sorted(moved.intersection(preview.changed))) and not force:
            self._discard(record)
            raise ApplyRefused.conflicts(preview.run_id, clashes)
        # The user's own edits elsewhere stay as they are; a link out of the project the
        # agent made is never carried into it.
        links_out = self.links_out(preview)
        touched = set(preview.changed) - set(links_out)
        changes = [c for c in self.store.changes(preview.after, record.before) if c.path in touched]
        written = self.store.restore(changes, Snapshot(preview.after, preview.after_modes), "wrote")
        written += self._restore_modes(preview.changed, preview.after_modes, changes)
        written += [
            f"left out {path} -> {target}: a link that leads out of the project"
            for path, target in links_out.items()
        ]
        finished = self.finish(record, "succeeded")
        self.close_preview(preview, "applied", applied_by=run_id)
        return Undone(finished, written)

    def pending_preview(self, run_id: str | None, *, finished: bool = True) -> RunRecord:
        """The preview `run_id` (or a prefix of it; default: the newest pending one), if it
        can still be applied (`finished`: its run ended) or discarded; a `UsageError` saying
        why not."""
        records = self.records()
        if run_id is None:
            records = [r for r in records if r.preview_state == "pending"]
        else:
            records = [r for r in records if r.run_id.startswith(run_id)]
        if len(records) != 1 and (run_id is not None or not records):
            which = f"has the id '{run_id}'" if run_id else "is waiting to be applied"
            raise UsageError(
                f"No single preview of {self.project} {which}.",
                "`wizard runs --project DIR` lists the runs and previews of a project.",
            )
        preview = records[0]
        if preview.kind != "preview":
            raise UsageError(
                f"Run {preview.run_id} is not a preview: it changed the project as it ran.",
                f"`wizard undo {preview.run_id}` takes it back.",
            )
        if preview.preview_state != "pending" or (finished and preview.after is None):
            by = f" by run {preview.applied_by}" if preview.applied_by else ""
            state = preview.preview_state or "unfinished"
            raise UsageError(
                f"Preview {preview.run_id} was {state}{by}; there is nothing left to do.",
                f"`wizard undo {preview.applied_by}` takes the applied change back."
                if preview.applied_by else "Run the program again with --preview.",
            )  # fmt: skip
        return preview

    def close_preview(
        self, preview: RunRecord, state: Literal["applied", "discarded"], **fields: Any
    ) -> RunRecord:
        """Remove a preview's copy; its record says it was applied or discarded."""
        self._remove_copy(preview)
        closed = preview.model_copy(update={"preview_state": state, **fields})
        self._save(closed)
        return closed

    def forget_preview(self, preview: RunRecord) -> None:
        """Remove a preview that never ran: its copy and its record."""
        self._remove_copy(preview)
        self._discard(preview)

    def changed_since_end(self, record: RunRecord) -> list[str]:
        """The paths that differ between the end of `record`'s run and the project now."""
        assert record.after is not None
        now = self.store.snapshot()
        return _changed_paths(
            self.store.changes(record.after, now.tree), record.after_modes, now.modes
        )

    def _changed_since(self, target: RunRecord, now: Snapshot) -> list[str]:
        assert target.after is not None
        since = self.store.changes(target.after, now.tree)
        touched = set(target.changed)
        moved = _changed_paths(since, target.after_modes, now.modes)
        return sorted(path for path in moved if path in touched)

    def _restore_modes(
        self, changed: list[str], modes: dict[str, int], done: list[Change]
    ) -> list[str]:
        """Give files whose permission bits alone differ the bits in `modes` (else git's)."""
        restored = []
        written = {change.path for change in done}
        for path in changed:
            file = self.project / path
            if path in written or not file.is_file() or file.is_symlink():
                continue
            bits = modes.get(path)
            if bits is None:
                bits = 0o755 if file.stat().st_mode & 0o100 else 0o644
            file.chmod(bits & PLAIN_BITS)
            restored.append(f"restored the mode of {path}")
        return restored

    def _preview_folder(self, run_id: str) -> Path:
        """Where a preview's copy (`project` in it) lives."""
        return self.state / "previews" / run_id

    def _remove_copy(self, record: RunRecord) -> None:
        """Remove a preview's copy, if the record is a preview's."""
        if record.preview_dir:
            remove_tree(self._preview_folder(record.run_id))

    def _discard(self, record: RunRecord) -> None:
        (self.runs_dir / f"{record.run_id}.json").unlink(missing_ok=True)

    def prune(self, keep: int | None = None) -> None:
        """Drop all but the newest `keep` records (`WIZARD_JOURNAL_KEEP`, default 20)."""
        if keep is None:
            keep = journal_keep(os.environ)
        records = self.records()
        old, kept = records[max(keep, 1) :], records[: max(keep, 1)]
        if not old:
            return
        gone = [*self.pruned(), *(record.run_id for record in old)][-MAX_PRUNED_NOTED:]
        write_atomically(self.state / PRUNED_FILE, json.dumps(gone).encode())
        for record in old:
            self._remove_copy(record)
            self._discard(record)
        self.store.forget(f"{r.run_id}/{side}" for r in old for side in ("before", "after"))
        listed = (d for r in kept for d in (*r.heavy_before.values(), *r.heavy_after.values()))
        prune_listings(self.state, listed)


def journal_keep(environ: Mapping[str, str]) -> int:
    """How many records a project's journal keeps (`WIZARD_JOURNAL_KEEP`, default 20); a
    `UsageError` naming a value that is not a whole number of at least 1 (a run checks it
    before it starts: the journal must never change how a run ends)."""
    value = environ.get("WIZARD_JOURNAL_KEEP", "").strip()
    if not value:
        return DEFAULT_KEEP
    if not value.isdigit() or int(value) < 1:
        raise UsageError(
            f"WIZARD_JOURNAL_KEEP={value!r} is not a whole number of at least 1.",
            "Set it to how many runs the journal keeps per project (default 20), or unset it.",
        )
    return int(value)


def _load(path: Path) -> RunRecord:
    return RunRecord.model_validate(json.loads(path.read_text()))


def _changed_paths(
    changes: list[Change], old_modes: dict[str, int], new_modes: dict[str, int]
) -> list[str]:
    """Paths whose content, type or permission bits differ."""
    paths = {change.path for change in changes}
    paths |= {p for p in {*old_modes, *new_modes} if old_modes.get(p) != new_modes.get(p)}
    return sorted(paths)


def _differing(
    before: Mapping[str, object], after: Mapping[str, object], *, only_after: bool = False
) -> list[str]:
    """The names whose fingerprint differs, or that only one side has (`only_after`: that
    the second has)."""
    names = set(after) if only_after else {*before, *after}
    return sorted(name for name in names if before.get(name) != after.get(name))
