"""The gateway key never reaches pi: pi talks to a loopback proxy with a per-run token."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.live.conftest import session_pid, watched_sessions
from wizard.events import EventRecorder
from wizard.runner.harness.pi.harness import PiHarness
from wizard.runner.harness.pi.session import PiSession
from wizard.runner.harness.types import GatewaySettings, RunInputs
from wizard.testing.gateway import ScriptedGateway

pytestmark = pytest.mark.live

KEY = "real-gateway-key-kept-in-wizard"


@pytest.mark.parametrize("api", ["anthropic-messages", "openai-completions"])
async def test_the_key_is_added_by_the_proxy_and_absent_from_pi(tmp_path: Path, api: str) -> None:
    seen: list[bytes] = []

    def capture(session: PiSession) -> None:
        seen.append(Path(f"/proc/{session_pid(session)}/environ").read_bytes())
        assert session._host is not None
        seen.extend(p.read_bytes() for p in session._host.agent_dir.rglob("*") if p.is_file())

    scenario = {"responses": [
        {"blocks": [{"tool_call": {"name": "write", "arguments": {"path": "a", "content": "x"}}}]},
        {"blocks": [{"text": "done"}]},
        {"blocks": [{"text": "[WIZARD-REMARK] ok"}]},
    ]}  # fmt: skip
    async with ScriptedGateway(scenario, required_key=KEY) as gateway:
        inputs = RunInputs(
            project_dir=tmp_path,
            prompt="go",
            model="m",
            gateway=GatewaySettings(gateway.url, api, KEY, retries=0),  # type: ignore[arg-type]
            sink=EventRecorder(),
        )
        result = await PiHarness(session_factory=watched_sessions(capture)).run(inputs)
    assert result.ok, result
    gateway.assert_complete()
    assert seen and all(KEY.encode() not in blob for blob in seen)
    assert os.environ.get("WIZARD_ENGINE_GATEWAY_KEY") is None


async def test_a_wrong_key_is_an_api_error(tmp_path: Path) -> None:
    async with ScriptedGateway(
        {"responses": [{"blocks": [{"text": "x"}]}]}, required_key=KEY
    ) as gateway:
        inputs = RunInputs(
            project_dir=tmp_path,
            prompt="go",
            model="m",
            gateway=GatewaySettings(url=gateway.url, key="wrong", retries=0),
            sink=EventRecorder(),
        )
        harness = PiHarness()
        try:
            result = await harness.run(inputs)
        finally:
            await harness.close()  # the run's end: its hosts gone
    assert result.error is not None and "401" in (result.message or "")
