"""Live tests: the real pi engine against the scripted gateway on 127.0.0.1."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from wizard.engines import bundle as engine
from wizard.events import EventRecorder
from wizard.outcome import AgentResult
from wizard.processes import descendants
from wizard.runner.harness.pi.harness import PiHarness
from wizard.runner.harness.pi.session import PiSession
from wizard.runner.harness.types import EngineLaunch, GatewayApi, GatewaySettings, RunInputs
from wizard.testing.gateway import ScriptedGateway
from wizard.tools.base import HostTool
from wizard.tools.fence import Fence
from wizard.tools.sandbox import SandboxPolicy, build_policy


@pytest.fixture(scope="session", autouse=True)
def pi_engine() -> Iterator[engine.NodeBundle]:
    installed = engine.installed_bundle()
    if installed is None:
        if os.environ.get("CI"):
            pytest.fail("pi is not installed; .ci/run must run `wizard engines install pi`")
        pytest.skip("pi is not installed (wizard engines install pi)")
    yield installed


@dataclass
class LiveRun:
    """One harness run on the real engine, and what it left behind."""

    result: AgentResult
    gateway: ScriptedGateway
    recorder: EventRecorder
    pids: list[int] = field(default_factory=list)
    sessions: list[PiSession] = field(default_factory=list)

    def assert_no_process_left(self) -> None:
        assert_gone(self.pids)


def assert_gone(pids: Sequence[int]) -> None:
    """Fail if any of these pi processes, or anything they started, still runs."""
    for pid in pids:
        assert not Path(f"/proc/{pid}").exists() or _zombie(pid), f"pi {pid} still runs"
        assert descendants(pid) == []


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def session_pid(session: PiSession) -> int:
    """The pid of a started session."""
    assert session.pid is not None
    return session.pid


def watched_sessions(
    on_start: Callable[[PiSession], object], **session_options: Any
) -> Callable[[EngineLaunch], PiSession]:
    """A session factory for real pi sessions that calls `on_start` once each has started."""

    def factory(launch: EngineLaunch) -> PiSession:
        session = PiSession(launch, **session_options)
        start = session.start

        async def start_and_watch() -> None:
            await start()
            on_start(session)

        session.start = start_and_watch  # type: ignore[method-assign]
        return session

    return factory


async def run_live(
    project: Path,
    scenario: dict[str, Any],
    *,
    api: GatewayApi = "anthropic-messages",
    prompt: str = "Set up the program.",
    tools: Callable[[Fence], Sequence[HostTool]] = lambda fence: (),
    on_start: Callable[[PiSession], object] = lambda session: None,
    retries: int = 0,
    idle_timeout: float = 90.0,
    sandbox: SandboxPolicy | bool | None = True,
    **session_options: Any,
) -> LiveRun:
    """Run the pi harness on the real engine against `scenario`.

    Commands run in the OS sandbox, as in a real run: a policy for `project` unless one is
    given; `sandbox=False` runs them with the fence alone.
    """
    temp = Path(tempfile.mkdtemp(prefix="wizard-live-"))
    if sandbox is True:
        sandbox = build_policy(project, temp)
    recorder = EventRecorder()
    sessions: list[PiSession] = []

    def started(session: PiSession) -> None:
        sessions.append(session)
        on_start(session)

    factory = watched_sessions(started, **session_options)
    async with ScriptedGateway(scenario) as gateway:
        inputs = RunInputs(
            project_dir=project,
            prompt=prompt,
            model="scripted-1",
            gateway=GatewaySettings(
                url=gateway.url, api=api, retries=retries, idle_timeout=idle_timeout
            ),
            sink=recorder,
            tools=tools,
            sandbox=sandbox or None,
        )
        try:
            result = await PiHarness(session_factory=factory).run(inputs)
        finally:
            shutil.rmtree(temp, ignore_errors=True)
        assert await gateway.settled()
    return LiveRun(result, gateway, recorder, [session_pid(s) for s in sessions], sessions)
