"""The engine watchdog: an engine that hangs is a failure, whichever engine it is.

A turn is open from the prompt to its end. While it is open the engine must show life: an
event (streamed text, a message, a tool starting or ending) at least every `timeout`
seconds, unless one of wizard's tools is running (a long build is not a hang). An engine
process that is stopped (SIGSTOP, a debugger) for `timeout` seconds fails the same way. The
gateway proxy's idle timeout, shorter, catches a silent gateway first; this catches the
engine itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from typing import Any

from wizard.errors import EngineError
from wizard.processes import is_stopped
from wizard.runner.harness.types import PromptResult


class EngineWatchdog:
    """Watches one session's turns; subscribe it to the session's events."""

    def __init__(self, engine: str, timeout: float, pid: Callable[[], int | None]) -> None:
        self.engine = engine
        self.timeout = timeout
        self.pid = pid
        self._last_event = time.monotonic()
        self._tools_running = 0
        self._tools_since = 0.0
        # How long at least one tool ran (the run's `tool_seconds`).
        self.tool_seconds = 0.0

    def __call__(self, event: dict[str, Any]) -> None:
        now = self._last_event = time.monotonic()
        kind = event.get("type")
        if kind == "tool_start":
            if self._tools_running == 0:
                self._tools_since = now
            self._tools_running += 1
        elif kind == "tool_end" and self._tools_running:
            self._tools_running -= 1
            if self._tools_running == 0:
                self.tool_seconds += now - self._tools_since

    async def watch(self, turn: Awaitable[PromptResult]) -> PromptResult:
        """The turn's result, or `EngineError` once the engine hung (the turn is cancelled)."""
        pending = asyncio.ensure_future(turn)
        self._last_event = time.monotonic()
        try:
            return await self._wait(pending)
        finally:
            if not pending.done():
                pending.cancel()
                with contextlib.suppress(asyncio.CancelledError, EngineError):
                    await pending

    async def _wait(self, pending: asyncio.Future[PromptResult]) -> PromptResult:
        timeout, stopped_since = self.timeout, None
        while True:
            with contextlib.suppress(TimeoutError):
                return await asyncio.wait_for(asyncio.shield(pending), min(timeout, 1.0))
            now = time.monotonic()
            stopped_since = (stopped_since or now) if is_stopped(self.pid()) else None
            if stopped_since is not None and now - stopped_since >= timeout:
                raise EngineError(
                    f"{self.engine} has been stopped (not running) for {timeout:g} s."
                )
            if not self._tools_running and now - self._last_event >= timeout:
                raise EngineError(
                    f"{self.engine} produced no event for {timeout:g} s while a turn was open "
                    "and no tool was running: it hung."
                )
