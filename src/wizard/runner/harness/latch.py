"""The stop-marker latch: the first marker of a work turn wins, with its source.

A harness feeds the latch every assistant text block of a work turn, while it streams
(`BlockScanner.feed`) and when it is complete (`BlockScanner.finish`). While streaming, only
complete lines are scanned, so a reason is never cut short; a marker's line ends the run as
soon as its newline arrives. The latch is disarmed outside work turns (the remark reply), so
nothing there can end a run, and so is it once `until()` holds (a task run's agent has
reported: what it says afterwards is not work). Later markers never change what was latched.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from wizard.signals import (
    DEFAULT_GATEWAY_MARKER,
    StopMarker,
    first_stop_marker,
    skill_abort_settled,
)


class StopLatch:
    """Holds the first stop marker of a run; `fired` is set when one is latched."""

    def __init__(
        self,
        gateway_marker: str = DEFAULT_GATEWAY_MARKER,
        fired: asyncio.Event | None = None,
        *,
        until: Callable[[], bool] = lambda: False,
        skill_markers: bool = True,
    ) -> None:
        self.gateway_marker = gateway_marker
        # Whether a skill's `[ABORT]` counts in this run, or only the gateway's refusal.
        self.skill_markers = skill_markers
        self.marker: StopMarker | None = None
        self.latched_at: float | None = None  # monotonic
        self.fired = fired or asyncio.Event()
        self._armed = True
        self._until = until

    @property
    def armed(self) -> bool:
        """Whether a marker would count now: not after `disarm()`, nor once `until()` holds."""
        return self._armed and not self._until()

    def disarm(self) -> None:
        """Stop listening: what follows is not a work turn."""
        self._armed = False

    def offer(self, text: str, *, skill_markers: bool = True) -> StopMarker | None:
        """Scan `text`; latch its first marker if armed and nothing is latched yet."""
        if not self.armed or self.marker is not None:
            return None
        skill_markers = skill_markers and self.skill_markers
        found = first_stop_marker(text, self.gateway_marker, skill_markers=skill_markers)
        if found is not None:
            self._latch(found)
        return found

    def _latch(self, marker: StopMarker) -> None:
        self.marker = marker
        self.latched_at = time.monotonic()
        self.fired.set()

    def scanner(self) -> BlockScanner:
        """A scanner for one text block."""
        return BlockScanner(self)


class BlockScanner:
    """Scans one streamed text block in linear time, complete lines first.

    It keeps only the unsettled tail of the block (`_window`), so a long reply costs time and
    memory in proportion to its length, not its square, and it latches exactly what scanning
    the whole block at once would: once the block's first `[ABORT]` match is known to hold
    no reason, no later skill marker of the block counts (only the gateway's can).
    """

    def __init__(self, latch: StopLatch) -> None:
        self._latch = latch
        self._window = ""
        self._skill_settled = False

    def feed(self, delta: str) -> None:
        """Add streamed text; scan the lines it completes."""
        self._window += delta
        if "\n" in delta:
            self._scan(self._window.rfind("\n") + 1)

    def finish(self) -> None:
        """The block is complete: scan what is left, the last line included."""
        self._scan(len(self._window))

    def _scan(self, end: int) -> None:
        complete = self._window[:end]
        if self._latch.offer(complete, skill_markers=not self._skill_settled) is not None:
            return
        keep = end
        if not self._skill_settled:
            keep, self._skill_settled = skill_abort_settled(complete)
        self._window = self._window[keep:]
