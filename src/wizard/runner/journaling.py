"""The journal's part in a run: the project's files before it, and after it, whatever happens.

The journal must never change how a run ends: when git is missing or the journal cannot be
written, the run goes on with a warning that `wizard undo` cannot take it back.

The closing snapshot walks the whole project and lists every file of the dependency folders
(`node_modules`...): on a large project, a tenth of a second and more. With the OS sandbox on,
that walk is taken ahead: whenever the last tool call the run let through has ended
(`ToolActivity`), nothing of the agent's runs until the gate lets the next one through, so a
walk taken then, in a thread while the model thinks, is the closing one if no call was let
through since (a run that ran none has its first snapshot's). Only the root's names wizard
itself writes under meanwhile are left to the close (`WALKED_AT_CLOSE`). Any call since, and
the whole walk is taken at the close, as before.
"""

from __future__ import annotations

import functools
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from wizard.ahead import Timeline
from wizard.errors import ConfigError, WizardError
from wizard.events import EventSink, LogLine
from wizard.journal import Journal, RunRecord, Walked, git_available
from wizard.layout import SKILLS_ROOT
from wizard.listings import FolderListing, beside, list_gently, take_ahead
from wizard.runner.harness.activity import ToolActivity
from wizard.runner.sequence.context import Binding
from wizard.tools.paths import is_env_name
from wizard.tools.shell import PLACEHOLDERS

# How long after the last tool call ended the project is walked ahead.
_PAUSE = 0.3
# The root's names wizard itself writes under while nothing of the agent's runs, walked again
# at the close: the sandbox's placeholders (the next command's sandbox is made while the model
# thinks; they are gone by the close) and the skill (installed after the first snapshot).
WALKED_AT_CLOSE = frozenset(
    PurePosixPath(name).parts[0] for name in (*PLACEHOLDERS, SKILLS_ROOT.as_posix())
)
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
    # The run's tool calls, when the OS sandbox holds its commands (`watch`): the closing
    # snapshot's walk is then taken ahead (`ahead`); None: at the close.
    activity: ToolActivity | None = None
    _ahead: _Ahead | None = field(default=None, repr=False)
    # The first snapshot's walk: the closing one's when no call was let through.
    _first: Walked | None = field(default=None, repr=False)

    @classmethod
    def open(
        cls,
        project: Path,
        run_id: str,
        program_id: str,
        binding: Binding,
        sink: EventSink,
        ahead: Timeline,
    ) -> RunJournal:
        """Snapshot the project before the run (with its dependency folders' listings, if
        they were taken `ahead`)."""
        if not git_available():
            sink(LogLine(f"git was not found: {_OFF}. Install git to turn it on.", "warning"))
            return cls(sink, warning=f"{NOT_JOURNALED} (git was not found).")
        try:
            journal = Journal(project)
            taken = functools.partial(_taken_ahead, ahead, project, sink)
            record = journal.begin(run_id, program_id, binding.harness, binding.sequence,
                                   ahead=taken)  # fmt: skip
        except (WizardError, OSError) as exc:
            sink(LogLine(f"the run journal failed ({exc}): {_OFF}.", "warning"))
            return cls(sink, warning=f"{NOT_JOURNALED} ({exc}).")
        return cls(sink, journal, record, _first=journal.store.last_walk)

    @staticmethod
    def reads_every_file(project: Path) -> bool:
        """Whether the project's first snapshot reads and stores every file: no snapshot of
        it was taken before (or the journal was removed since)."""
        return not Journal(project).store.cached()

    @classmethod
    def open_preview(
        cls,
        project: Path,
        run_id: str,
        program_id: str,
        binding: Binding,
        sink: EventSink,
        ahead: Timeline,
    ) -> RunJournal:
        """Snapshot the project before a preview and make the copy it runs on. A preview
        without its journal could never be applied: a `ConfigError` naming the fix."""
        if not git_available():
            raise ConfigError(
                "A preview needs git, for its journal; git was not found.",
                "Install git, or run without --preview.",
            )
        journal = Journal(project)
        taken = functools.partial(_taken_ahead, ahead, project, sink)
        record = journal.begin_preview(run_id, program_id, binding.harness, binding.sequence,
                                       taken)  # fmt: skip
        return cls(sink, journal, record)

    def abandon(self) -> None:
        """Forget a preview that never ran (its engine or sandbox could not start)."""
        if self.journal is not None and self.record is not None:
            self.journal.forget_preview(self.record)
            self.record = None

    def watch(self, activity: ToolActivity | None) -> None:
        """Walk the project for the closing snapshot ahead, as `activity` says when (None: at
        the close)."""
        self.activity = activity
        if activity is not None:
            activity.on_quiet, activity.on_busy = self.ahead, self.busy

    def ahead(self, mark: int) -> None:
        """Walk the project again, in a thread, for the closing snapshot: the last tool call
        let through has ended (`mark`, `ToolActivity.on_quiet`); not if none was let through
        (mark 0): the first snapshot's walk is the closing one."""
        if self.journal is None or self.record is None or mark == 0:
            return
        if self._ahead is None:
            self._ahead = _Ahead(functools.partial(_walk_ahead, self.journal))
        self._ahead.want(mark, at_once=self.activity is not None and self.activity.closing)

    def busy(self) -> None:
        """A tool call was let through: a walk being taken is of no use any more."""
        if self._ahead is not None:
            self._ahead.stop()

    def _walked(self) -> Walked | None:
        """The project's walk taken since the last tool call let through ended, if nothing
        was let through since (waited for if it is being taken), without the names walked
        at the close; None otherwise."""
        mark = self.activity.mark() if self.activity is not None else None
        if mark is None:
            return None
        if mark == 0:  # nothing ran: the first snapshot's walk
            walked = None if self._first is None else self._first.without(WALKED_AT_CLOSE)
        else:
            walked = self._ahead.taken(mark) if self._ahead is not None else None
        if walked is not None:
            self.sink(LogLine("the closing snapshot takes the project's walk made since the "
                              "last tool call ended", "debug"))  # fmt: skip
        return walked

    def finish(
        self, status: str, error_type: str | None = None, record: RunRecord | None = None
    ) -> RunRecord | None:
        """Snapshot the project after the run (again, given its finished `record`, without a
        walk taken ahead: checks ran since); the finished record."""
        ahead = self._walked if record is None else None
        record = record or self.record
        if self.journal is None or record is None:
            return None
        try:
            return self.journal.finish(record, status, error_type, ahead)
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

    def contents_before(
        self, record: RunRecord | None, since: str | None = None
    ) -> dict[str, bytes | None] | None:
        """Each file the finished run changed, with its content before it (before the run
        `since`, which it resumed; None: the run added it); None when the journal cannot
        say."""
        if self.journal is None or record is None:
            return None
        try:
            earlier = self.journal.get(since) if since else None
            return self.journal.contents_before(record, earlier)
        except (WizardError, OSError, ValueError) as exc:
            self.sink(LogLine(f"the run journal could not say what the run changed ({exc})",
                              "warning"))  # fmt: skip
            return None

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


def _taken_ahead(ahead: Timeline, project: Path, sink: EventSink) -> list[FolderListing]:
    """The project's dependency folders, listed ahead of the run (`listings`); none when
    they were not."""
    taken = take_ahead(ahead, project)
    if taken is None:
        return []
    sink(LogLine(f"the first snapshot takes the {len(taken)} dependency folder listing(s) "
                 "made while wizard loaded", "debug"))  # fmt: skip
    return taken


def _walk_ahead(journal: Journal, stop: Callable[[], bool]) -> Walked:
    """The project's walk for the closing snapshot, its dependency folders listed beside the
    walk of the rest (their `find`s in processes of their own), but for the names walked at
    the close (`ListingStopped` once `stop` says so)."""
    store = journal.store
    listed = beside(functools.partial(store.heavy_listings, stop))
    return store.walk(listed=listed, leave=WALKED_AT_CLOSE, stop=stop)


class _Ahead:
    """One thread that walks the project when asked, and keeps the last walk it took, by its
    mark. It waits `pause` first (the engine makes the next command's sandbox meanwhile),
    gives up once a call is let through or a newer ask comes (`stop`), and lists the
    dependency folders at the lowest priority (`list_gently`). A close that finds a walk
    still in its pause takes it itself, listing them at its own priority: the run's end
    never waits on a `find` the engine's teardown starves."""

    def __init__(
        self, take: Callable[[Callable[[], bool]], Walked], pause: float | None = None
    ) -> None:
        self._take = take
        self._pause = _PAUSE if pause is None else pause
        self._changed = threading.Condition()
        self._asked: int | None = None
        self._asks = 0  # each ask, and each stop, makes the one in hand stale
        self._taking: tuple[int, int] | None = None  # the mark and ask of the walk under way
        self._taken: tuple[int, Walked] | None = None
        self._thread: threading.Thread | None = None

    def want(self, mark: int, *, at_once: bool = False) -> None:
        """Walk the project for `mark`; `at_once`: the run is ending, so without the pause,
        in a thread of its own at the run's priority (its close will wait for it), unless
        that walk is under way or taken already."""
        with self._changed:
            if at_once and any(held is not None and held[0] == mark
                               for held in (self._taking, self._taken)):  # fmt: skip
                return
            self._asks += 1
            if at_once:
                ask = self._asks
                self._asked, self._taking = None, (mark, ask)
                threading.Thread(target=self._take_now, args=(mark, ask), name="journal-close",
                                 daemon=True).start()  # fmt: skip
                return
            self._asked = mark
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name="journal-ahead",
                                                daemon=True)  # fmt: skip
                self._thread.start()
            self._changed.notify_all()

    def stop(self) -> None:
        with self._changed:
            self._asked, self._asks = None, self._asks + 1
            self._changed.notify_all()

    def _work(self) -> None:
        list_gently()
        while True:
            with self._changed:
                while self._asked is None:
                    self._changed.wait()
                until = time.monotonic() + self._pause
                while self._asked is not None:
                    if (left := until - time.monotonic()) <= 0:
                        break
                    self._changed.wait(left)
                if self._asked is None:
                    continue
                mark, ask = self._asked, self._asks
                self._taking, self._asked = (mark, ask), None
            self._take_now(mark, ask)

    def _take_now(self, mark: int, ask: int) -> None:
        self._walked(mark, ask)
        with self._changed:
            if self._taking == (mark, ask):  # not a newer walk's, of the same mark
                self._taking = None
            self._changed.notify_all()

    def _walked(self, mark: int, ask: int) -> Walked | None:
        """The walk taken for `mark` (kept), or None (stopped, or failed: the close walks the
        project itself)."""
        try:
            walked = self._take(functools.partial(self._stale, ask))
        except Exception:
            return None
        with self._changed:
            self._taken = (mark, walked)
        return walked

    def _stale(self, ask: int) -> bool:
        return self._asks != ask

    def taken(self, mark: int) -> Walked | None:
        """The walk taken at `mark` (taken now if still in its pause, waited for if being
        taken); None if none was asked for."""
        with self._changed:
            if self._asked == mark:  # not begun: taken here, the pause cut short
                self._asked, self._asks = None, self._asks + 1
                self._changed.notify_all()
                ask = self._asks
            else:
                while True:
                    if self._taken is not None and self._taken[0] == mark:
                        return self._taken[1]
                    if self._taking is None or self._taking[0] != mark:
                        return None
                    self._changed.wait()
        return self._walked(mark, ask)
