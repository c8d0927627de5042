"""The one engine watchdog: a silent engine is a hang; a running tool is not; both engines."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from wizard.errors import EngineError
from wizard.events import EventRecorder
from wizard.outcome import AgentErrorType
from wizard.runner.harness.types import GatewaySettings, PromptResult, RunInputs
from wizard.runner.harness.watchdog import EngineWatchdog

TIMEOUT = 0.3  # seconds of silence that count as a hang here


async def test_an_engine_silent_while_a_turn_is_open_has_hung() -> None:
    never: asyncio.Future[PromptResult] = asyncio.get_running_loop().create_future()
    watchdog = EngineWatchdog("pi", TIMEOUT, lambda: None)
    with pytest.raises(EngineError, match=r"pi produced no event for 0\.3 s"):
        await watchdog.watch(never)
    assert never.cancelled()  # the hung turn is not left behind


async def test_a_running_tool_is_not_a_hang() -> None:
    watchdog = EngineWatchdog("pi", TIMEOUT, lambda: None)
    done: asyncio.Future[PromptResult] = asyncio.get_running_loop().create_future()
    watchdog({"type": "tool_start", "name": "bash"})
    asyncio.get_running_loop().call_later(TIMEOUT * 3, done.set_result, PromptResult("stop"))
    assert await watchdog.watch(done) == PromptResult("stop")


async def test_the_claude_cli_silent_mid_turn_is_an_engine_failure(tmp_path: Path) -> None:
    pytest.importorskip("claude_agent_sdk")
    from wizard.runner.harness.anthropic.harness import AnthropicHarness
    from wizard.testing.fake_cli import FakeClaudeCLI

    cli = FakeClaudeCLI([[{"hold": True}]])  # the model never answers
    inputs = RunInputs(
        project_dir=tmp_path,
        prompt="Set up the program.",
        model="scripted-1",
        gateway=GatewaySettings(url="http://127.0.0.1:9"),
        sink=EventRecorder(),
        engine_timeout=TIMEOUT,
    )
    result = await AnthropicHarness(client_factory=cli.client).run(inputs)
    assert result.error is AgentErrorType.ENGINE_FAILURE, result
    assert "anthropic produced no event" in (result.message or "")
    assert cli.requests == ["initialize", "interrupt"]  # the turn was stopped, not orphaned
