"""Which of a run's tool calls are running: whether anything of the agent's may be, for the
journal, which walks the project for its closing snapshot once nothing is (`RunJournal.ahead`).

A run's gates (`gate.ToolGate`) say what they let through; the engines' `tool_end` events
say what ended. This only counts: it decides nothing.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from typing import Any


class ToolActivity:
    """The tool calls a run's gates let through, and which of them have not ended: whether
    anything of the agent's may be running, and a mark that says nothing was let through
    since (`mark`, `still`).

    Every call is let through by a gate before it runs, on every engine (fail closed); its
    end is the engine's `tool_end` event for its id, in its own session (`session`: another
    session's ids may repeat them, as a scripted or local model numbers its calls). A
    command's processes end with it (the OS sandbox kills what it started), so with the
    sandbox on, a run whose calls have all ended changes nothing until the next is let
    through. A call let through without an id, or an id a session's gate saw before, could
    never be told apart from another's end: from then on the run is never quiet."""

    def __init__(
        self,
        on_quiet: Callable[[int], None] = lambda mark: None,
        on_busy: Callable[[], None] = lambda: None,
    ) -> None:
        self.on_quiet = on_quiet  # called with the mark each time the last open call ends
        self.on_busy = on_busy  # called each time a call is let through
        # Set once the run is ending (`ending`): what is quiet then is, as far as anyone
        # knows, quiet for good.
        self.closing = False
        self._let_through = 0
        self._seen: set[str] = set()  # every call a gate judged, by session and id
        self._open: set[str] = set()
        self._unmatched = False
        self._sessions = itertools.count()

    def session(self) -> SessionCalls:
        """A view of this for one session's gate and events."""
        return SessionCalls(self, next(self._sessions))

    def judged(self, key: str | None, let_through: bool) -> None:
        """A gate judged a call (`key`: its session and id), and let it run or not."""
        if key is None or key in self._seen:
            self._unmatched = True
        else:
            self._seen.add(key)
        if let_through:
            self.on_busy()
            self._let_through += 1
            if key is not None:
                self._open.add(key)

    def ended(self, key: str) -> None:
        """The engine said a call ended."""
        if key in self._open:
            self._open.discard(key)
            if (mark := self.mark()) is not None:
                self.on_quiet(mark)

    def ending(self) -> None:
        """The run is ending (a stop marker latched, or a critical violation): its gates let
        nothing through any more. Says so to `on_quiet` now if no call is running, else when
        the last ends. Once: each conversation that ends the run says so."""
        if self.closing:
            return
        self.closing = True
        if (mark := self.mark()) is not None:
            self.on_quiet(mark)

    def mark(self) -> int | None:
        """A mark of this moment, when no call that was let through is still running."""
        return None if self._open or self._unmatched else self._let_through

    def still(self, mark: int | None) -> bool:
        """Whether nothing was let through since `mark` was taken."""
        return mark is not None and self.mark() == mark


class SessionCalls:
    """One session's part of the run's `ToolActivity`: what its gate judged, and its engine's
    `tool_end` events (subscribe it to the session)."""

    def __init__(self, run: ToolActivity, session: int) -> None:
        self.run, self._session = run, session

    def _key(self, call_id: object) -> str:
        return f"{self._session}:{call_id}"

    def judged(self, call_id: str | None, let_through: bool) -> None:
        """The session's gate judged a call."""
        self.run.judged(None if call_id is None else self._key(call_id), let_through)

    def __call__(self, event: Mapping[str, Any]) -> None:
        if event.get("type") == "tool_end":
            self.run.ended(self._key(event.get("id")))
