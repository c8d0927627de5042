"""`AnthropicHarness`: runs on the Claude Agent SDK (the legacy fallback), ending as pi's do.

The conversation is the one driver's (`runner.harness.driver`); Claude Code is a
`ClaudeSession` behind it. The abort semantics follow the TypeScript wizard's anthropic path
(checklist §10.6), with one rule on top: a declared stop never ends in success. A skill's
`[ABORT] <reason>` is looked for only when the program declares abort cases, in linear runs
and in orchestrator seed and task runs alike; the gateway's refusal marker in every run, as
on pi. The remark reply is read too: a marker there still ends the run.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any

from wizard.ahead import Timeline
from wizard.engines.bundle import verified_bundle
from wizard.engines.claude import check_bundled_cli, check_sdk_installed, load_sdk
from wizard.errors import EngineChanged, EngineError, UsageError
from wizard.runner.harness.anthropic.session import ClaudeSession, ClientFactory
from wizard.runner.harness.driver import DetectionPolicy, EngineHarness, reap
from wizard.runner.harness.proxy import client_made_ahead
from wizard.runner.harness.types import EngineLaunch

CLAUDE_DETECTION = DetectionPolicy(skill_aborts="declared", remark_markers=True)


class AnthropicHarness(EngineHarness):
    """The legacy harness: Claude Code through the Claude Agent SDK."""

    name = "anthropic"
    detection = CLAUDE_DETECTION

    def __init__(self, client_factory: ClientFactory | None = None) -> None:
        # Tests hand in a client over a scripted transport; runs use `ClaudeSDKClient`.
        def session(launch: EngineLaunch) -> ClaudeSession:
            return ClaudeSession(launch, self._sdk, client_factory, reaping=self._exits)

        super().__init__(session)
        self._loading: asyncio.Future[ModuleType] | None = None
        self._exits: list[asyncio.Future[Any]] = []  # CLIs killed, runtimes stopping (`close`)

    async def prepare(self, progress: Callable[[str], None], ahead: Timeline) -> None:
        """The CLI must be the one the SDK installed. The engine bundle, which holds the
        sandbox runtime for wizard's `bash`, is installed if missing, and what of it the
        runtime runs is checked (`bundle.runtime_folders`: a tenth of its files; this harness
        runs nothing else of it); without Node.js only a run with --no-sandbox can go on (a
        sandboxed one then stops, naming the fix). The SDK is imported later, by the first
        session, once it has started the CLI (`_sdk`)."""
        await super().prepare(progress, ahead)
        await asyncio.to_thread(check_bundled_cli)
        try:
            await asyncio.to_thread(verified_bundle, progress, runtime_only=True)
        except EngineChanged:
            raise  # a changed sandbox runtime would run commands outside the sandbox
        except EngineError as exc:
            progress(f"the sandbox runtime is not available: {exc.message}")

    async def close(self) -> None:
        """Wait for the CLIs the sessions killed to be gone (their ends overlapped the
        journal's closing snapshot)."""
        await reap(self._exits)

    async def _sdk(self) -> ModuleType:
        """The SDK, once imported (in a thread, once for every session of the run: 1.5 s of
        CPU here, which the CLI's own start overlaps; started no earlier, since it holds the
        interpreter's lock most of that time: the journal's first walk of the project, and
        the engine's check, would wait on it); `EngineError` if it cannot be (after the
        install check passed: a broken install), with the command that mends it.

        The thread is a daemon: a run that ends while the SDK loads (Ctrl-C) does not wait
        for it at exit. Its failure is each waiting session's to report; with none left
        waiting, it is not logged as never retrieved."""
        if self._loading is None:
            self._loading = _in_daemon_thread(functools.partial(_load_sdk, self.ahead))
            self._loading.add_done_callback(lambda done: done.cancelled() or done.exception())
        try:
            return await asyncio.shield(self._loading)
        except UsageError as exc:
            raise EngineError(exc.message, exc.hint) from exc


def usable_harness() -> AnthropicHarness:
    """The harness, once the SDK is found: a `UsageError` with the install command if it is
    not, before anything starts."""
    check_sdk_installed()
    return AnthropicHarness()


def _load_sdk(ahead: Timeline) -> ModuleType:
    """The SDK, imported once the gateway client's modules made ahead are (anyio is one of
    each: two threads importing one package at once can fail one of the imports)."""
    client_made_ahead(ahead)
    return load_sdk()


def _in_daemon_thread(load: Callable[[], ModuleType]) -> asyncio.Future[ModuleType]:
    """`load()` in a daemon thread, as a future of the running loop."""
    done: concurrent.futures.Future[ModuleType] = concurrent.futures.Future()

    def run() -> None:
        try:
            done.set_result(load())
        except BaseException as exc:  # the session that awaits it reports it
            done.set_exception(exc)

    threading.Thread(target=run, name="claude-sdk-import", daemon=True).start()
    return asyncio.wrap_future(done)
