"""`PiHarness`: runs on the real pi coding agent (the default harness).

The conversation is the one driver's (`runner.harness.driver`); pi is a `PiSession` behind
it, which runs pi's own `bash` in the OS sandbox and wizard's host tools (its file tools
among them) over the bridge. pi looks for a skill's `[ABORT]` in every work turn, and the
remark reply is read for the remark only: nothing in it ends or reclassifies a run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from wizard.engines.bundle import verified_bundle
from wizard.runner.harness.driver import DetectionPolicy, EngineHarness, SessionFactory
from wizard.runner.harness.pi.session import PiSession

PI_DETECTION = DetectionPolicy(skill_aborts="always", remark_markers=False)


class PiHarness(EngineHarness):
    """The default harness: the pi coding agent, through wizard's pi host."""

    name = "pi"
    detection = PI_DETECTION

    def __init__(self, session_factory: SessionFactory = PiSession) -> None:
        super().__init__(session_factory)

    async def prepare(self, progress: Callable[[str], None]) -> None:
        """Make sure pi is installed (installing it on first use) and its files are the ones
        installed; `EngineError` (`EngineChanged`) if not."""
        await asyncio.to_thread(verified_bundle, progress)
