"""`PiHarness`: runs on the real pi coding agent (the default harness).

The conversation is the one driver's (`runner.harness.driver`); pi is a `PiSession` behind
it, which runs pi's own `bash` in the OS sandbox and wizard's host tools (its file tools
among them) over the bridge. pi looks for a skill's `[ABORT]` in every work turn, and the
remark reply is read for the remark only: nothing in it ends or reclassifies a run.

Once the engine is checked, `prepare` starts a pi host at once, which loads pi's SDK (most of
the engine's start-up) while the run gets the rest ready; the run's first session takes it,
and `close` ends it if none did.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from wizard.ahead import Timeline
from wizard.engines.bundle import ensure_bundle, verified_bundle
from wizard.runner.harness.driver import DetectionPolicy, EngineHarness, SessionFactory, reap
from wizard.runner.harness.pi.early import EARLY_HOST, adopt_early_host
from wizard.runner.harness.pi.session import HostProcess, PiSession, start_host
from wizard.runner.harness.types import AgentSession, EngineLaunch

PI_DETECTION = DetectionPolicy(skill_aborts="always", remark_markers=False)


class PiHarness(EngineHarness):
    """The default harness: the pi coding agent, through wizard's pi host."""

    name = "pi"
    detection = PI_DETECTION

    def __init__(self, session_factory: SessionFactory | None = None) -> None:
        # Tests hand in scripted sessions; runs use `PiSession`, the first on the early host.
        super().__init__(session_factory or self._pi_session)
        self._early = session_factory is None
        self._host: HostProcess | None = None
        self._exits: list[asyncio.Future[int]] = []  # hosts killed, not yet gone (`close`)

    async def prepare(self, progress: Callable[[str], None], ahead: Timeline) -> None:
        """Make sure pi is installed (installing it on first use) and its files are the ones
        installed, then start the first session's host (or adopt the one started with the
        process, off the run's timeline); `EngineError` (`EngineChanged`) if the engine is
        not as installed (and then nothing of it runs)."""
        await super().prepare(progress, ahead)
        if self._early and ahead.has(EARLY_HOST):  # on the engine it checked
            engine = await asyncio.to_thread(ensure_bundle, progress)
            if (adopted := await adopt_early_host(engine, ahead.take(EARLY_HOST))) is not None:
                self._host = HostProcess(engine, *adopted)
                progress("pi started with wizard: its engine was checked then")
                return
        engine = await asyncio.to_thread(verified_bundle, progress)
        if self._early:
            self._host = await start_host(engine)

    def _pi_session(self, launch: EngineLaunch) -> AgentSession:
        host, self._host = self._host, None
        return PiSession(launch, host=host, reaping=self._exits)

    async def close(self) -> None:
        """End the early host if no session took it, and wait for the hosts the sessions
        killed to be gone (their ends overlapped the journal's closing snapshot)."""
        if self._host is not None:
            await self._host.discard()
            self._host = None
        await reap(self._exits)
