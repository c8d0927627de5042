"""The engine boundary on the real pi: fail-closed bridge, and teardown mid-tool."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from tests.live.conftest import session_pid, watched_sessions
from wizard.ahead import Timeline
from wizard.events import EventRecorder, ToolCalled
from wizard.processes import descendants
from wizard.runner.harness.pi.harness import PiHarness
from wizard.runner.harness.types import GatewaySettings, RunInputs
from wizard.testing.gateway import ScriptedGateway

pytestmark = pytest.mark.live


def _inputs(project: Path, url: str, recorder: EventRecorder) -> RunInputs:
    gateway = GatewaySettings(url=url, retries=0)
    return RunInputs(project_dir=project, prompt="go", model="m", gateway=gateway, sink=recorder)


async def test_the_bridge_fails_closed_when_the_host_is_gone(tmp_path: Path) -> None:
    # Once pi has started, the host can no longer be reached.
    factory = watched_sessions(lambda session: session.bridge.socket_path.unlink())

    scenario = {"responses": [
        {"blocks": [{"tool_call": {"name": "write", "arguments": {"path": "x", "content": "1"}}}]},
        {"blocks": [{"text": "ok"}]},
        {"blocks": [{"text": "[WIZARD-REMARK] -"}]},
    ]}  # fmt: skip
    async with ScriptedGateway(scenario) as gateway:
        await PiHarness(session_factory=factory).run(
            _inputs(tmp_path, gateway.url, EventRecorder())
        )
        second_request = str(gateway.requests[1].body)
    assert not (tmp_path / "x").exists()
    assert "fail-closed" in second_request


async def test_cancelling_a_run_mid_tool_leaves_no_process(tmp_path: Path) -> None:
    (tmp_path / "slow.py").write_text("import time\ntime.sleep(300)\n")
    scenario = {"responses": [
        {"blocks": [{"tool_call": {"name": "bash", "arguments": {"command": "python3 slow.py"}}}]},
    ]}  # fmt: skip
    recorder = EventRecorder()
    pids: list[int] = []
    factory = watched_sessions(lambda session: pids.append(session_pid(session)))

    async with ScriptedGateway(scenario) as gateway:
        run = asyncio.create_task(
            PiHarness(session_factory=factory).run(_inputs(tmp_path, gateway.url, recorder))
        )
        for _ in range(600):
            started = any(isinstance(e, ToolCalled) and e.name == "bash" for e in recorder.events)
            if started and pids and _slow_running(pids[0]):
                break
            await asyncio.sleep(0.05)
        else:
            pytest.fail("the bash tool never started")
        slow = [pid for pid in descendants(pids[0]) if b"slow.py" in _cmdline(pid)]
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
    assert slow, "expected the tool's python process"
    for pid in [pids[0], *slow]:
        assert not os.path.exists(f"/proc/{pid}") or _is_zombie(pid), f"{pid} survived"


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _slow_running(root: int) -> bool:
    return any(b"slow.py" in _cmdline(pid) for pid in descendants(root))


def _is_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


async def test_a_host_started_early_is_adopted_and_leaves_in_order(tmp_path: Path) -> None:
    """The host a run starts while it gets ready loads pi before any launch reaches it; the
    session adopts it, and at its close the host says it has left (its sandbox helpers
    stopped) before wizard stops waiting for it. Nothing of it is left."""
    from wizard.engines.bundle import verified_bundle
    from wizard.runner.harness.pi.session import start_host
    from wizard.testing.sessions import open_pi_session

    host = await start_host(verified_bundle())
    await asyncio.sleep(0.5)  # loading pi, asked nothing
    assert host.process.returncode is None
    async with ScriptedGateway({"responses": [{"blocks": [{"text": "hi"}]}]}) as gateway:
        async with open_pi_session(tmp_path, gateway.url, host=host) as session:
            assert session.pid == host.process.pid
            result = await session.prompt("go")
        assert result.stop_reason == "stop"
    assert session._left.is_set(), "the host did not say it left"
    assert host.process.returncode is not None
    assert not host.agent_dir.exists() and not host.temp_dir.exists()


async def test_a_host_no_session_took_ends_with_the_run(tmp_path: Path) -> None:
    harness = PiHarness()
    await harness.prepare(lambda line: None, Timeline())
    host = harness._host
    assert host is not None and host.process.returncode is None
    await harness.close()
    assert host.process.returncode is not None
    assert not host.agent_dir.exists() and not host.temp_dir.exists()
