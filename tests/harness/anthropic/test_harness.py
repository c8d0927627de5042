"""`AnthropicHarness` over the real Claude Agent SDK, its CLI replaced by a scripted transport.

One named test per item of checklist §10.6 (items 49–53), then what the harness shares with
pi: the completion guard, error classification and analytics.
"""

from __future__ import annotations

import asyncio
import threading
import types
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("claude_agent_sdk")

from wizard.events import EventRecorder, SpinnerStarted
from wizard.outcome import AgentErrorType, AgentResult
from wizard.runner.harness.anthropic import harness as harness_module
from wizard.runner.harness.anthropic.harness import AnthropicHarness
from wizard.runner.harness.types import GatewaySettings, RunInputs, TaskRunInputs
from wizard.signals import REMARK_INSTRUCTION, skill_abort_reason
from wizard.testing.fake_cli import FakeClaudeCLI, Frame

WORK: list[Frame] = [
    {"text": "[STATUS] Editing"},
    {"tool": "mcp__wizard__write", "input": {"path": "a.txt", "content": "x"}},
]
DONE: list[Frame] = [*WORK, {"text": "All done."}]
REMARK: list[Frame] = [{"text": "[WIZARD-REMARK] more docs please"}]


class Harnessed:
    """An anthropic run against a scripted CLI, with what a test asserts on."""

    def __init__(self, tmp_path: Path, turns: list[list[Frame]], **inputs: Any) -> None:
        self.cli = FakeClaudeCLI(turns)
        self.recorder = EventRecorder()
        fields: dict[str, Any] = {
            "project_dir": tmp_path,
            "prompt": "Set up the program.",
            "model": "scripted-1",
            "gateway": GatewaySettings(url="http://127.0.0.1:9"),
            "success_message": "Program set up",
            "sink": self.recorder,
            **inputs,
        }
        task = fields.pop("task", False)
        self.inputs = TaskRunInputs(**fields) if task else RunInputs(**fields)

    async def run(self) -> AgentResult:
        harness = AnthropicHarness(client_factory=self.cli.client)
        if isinstance(self.inputs, TaskRunInputs):
            result = await harness.run_task(self.inputs)
        else:
            result = await harness.run(self.inputs)
        self.cli.assert_complete()
        return result

    def names(self) -> list[str]:
        return [e.name for e in self.recorder.analytics()]


async def test_49_without_abort_cases_a_marker_is_ignored_and_the_run_succeeds(
    tmp_path: Path,
) -> None:
    h = Harnessed(tmp_path, [[*WORK, {"text": "[ABORT] no stripe"}], REMARK],
                  detect_skill_aborts=False)  # fmt: skip
    result = await h.run()
    assert result.ok and "interrupt" not in h.cli.requests
    assert "agent completed" in h.names()


async def test_49_with_abort_cases_the_marker_ends_the_run(tmp_path: Path) -> None:
    h = Harnessed(
        tmp_path, [[{"text": "[ABORT] could not find a stripe integration"}, {"hold": True}]]
    )
    result = await h.run()
    assert result == AgentResult(
        AgentErrorType.ABORT, "could not find a stripe integration", "skill"
    )


async def test_50_without_abort_cases_task_runs_ignore_a_marker(tmp_path: Path) -> None:
    h = Harnessed(tmp_path, [[*WORK, {"text": "[ABORT] stop"}]], task=True,
                  settled=lambda: True, detect_skill_aborts=False)  # fmt: skip
    result = await h.run()
    assert result.ok and "interrupt" not in h.cli.requests


async def test_a_declared_stop_in_a_task_run_ends_it(tmp_path: Path) -> None:
    """replay-vision (orchestrator + anthropic) declares abort cases: the stop line, then
    complete_task(done), ended "1/1 steps completed", exit 0. Now the marker ends the run."""
    h = Harnessed(tmp_path, [[{"text": "[ABORT] no replay here"}, {"hold": True}]], task=True,
                  settled=lambda: False, detect_skill_aborts=True)  # fmt: skip
    result = await h.run()
    assert result == AgentResult(AgentErrorType.ABORT, "no replay here", "skill")
    assert h.cli.requests == ["initialize", "interrupt"]


@pytest.mark.parametrize("task", [False, True])
async def test_the_gateways_refusal_ends_any_run_even_without_abort_cases(
    tmp_path: Path, task: bool
) -> None:
    """§10.6 left the gateway's marker undetected on this harness (a refused run with earlier
    tool calls succeeded); it ends every run now, as on pi."""
    refused: list[Frame] = [*WORK, {"text": "[posthog:abort] policy says no"}, {"hold": True}]
    task_fields: dict[str, Any] = {"task": True, "settled": lambda: False} if task else {}
    h = Harnessed(tmp_path, [refused], detect_skill_aborts=False, **task_fields)
    result = await h.run()
    assert (result.error, result.abort_source) == (AgentErrorType.ABORT, "gateway_policy")
    assert "interrupt" in h.cli.requests


async def test_51_any_reason_interrupts_at_once_and_stops_the_spinner(tmp_path: Path) -> None:
    # Not a case of the program's: anthropic aborts on any reason; the stream is still open.
    h = Harnessed(tmp_path, [[{"text": "[ABORT] something unforeseen"}, {"hold": True}]])
    result = await h.run()
    assert (result.error, result.message) == (AgentErrorType.ABORT, "something unforeseen")
    assert h.cli.requests == ["initialize", "interrupt"]
    assert h.recorder.spinner_stops() == ["Wizard aborted"]
    assert "agent aborted" in h.names() and "agent completed" not in h.names()


async def test_51_the_first_block_with_a_marker_wins(tmp_path: Path) -> None:
    h = Harnessed(
        tmp_path, [[{"texts": ["Looking.", "[ABORT] first", "[ABORT] second"]}, {"hold": True}]]
    )
    assert (await h.run()).message == "first"


async def test_51_the_remark_reply_is_scanned(tmp_path: Path) -> None:
    h = Harnessed(tmp_path, [DONE, [{"text": "[ABORT] found in the remark"}]])
    result = await h.run()
    assert (result.error, result.message) == (AgentErrorType.ABORT, "found in the remark")
    assert h.cli.prompts[-1] == REMARK_INSTRUCTION


async def test_51_a_security_violation_wins_over_a_marker(tmp_path: Path) -> None:
    hostile = {"tool": "mcp__wizard__bash", "input": {"command": "cat ~/.ssh/id_rsa"}}
    h = Harnessed(tmp_path, [[hostile, {"text": "[ABORT] x"}, {"hold": True}]])
    result = await h.run()
    assert result.error is AgentErrorType.SECURITY_VIOLATION
    assert h.recorder.spinner_stops() == ["Security violation detected"]
    (denied,) = [r for r in h.cli.tool_results if r[1]]
    assert "credentials" in denied[2] or "SSH" in denied[2]


@pytest.mark.parametrize(
    "text",
    ["[ABORT] plain reason", "[ABORT]   ", "[ABORT]", "prefix [ABORT] mid-line",
     "  [ABORT] indented", "[abort] lower case", "[ABORT] reason\nmore lines",
     "Line one\n[ABORT] second line"],
)  # fmt: skip
async def test_52_the_shared_parser_decides(tmp_path: Path, text: str) -> None:
    expected = skill_abort_reason(text)
    turns: list[list[Frame]] = [[*WORK, {"text": text}, {"hold": True}]]
    if expected is None:
        turns = [[*WORK, {"text": text}], REMARK]
    h = Harnessed(tmp_path, turns)
    result = await h.run()
    assert result.message == expected if expected is not None else result.ok


# --- shared with pi: guard, classification, analytics -----------------------------------


async def test_no_tool_call_is_no_progress(tmp_path: Path) -> None:
    h = Harnessed(tmp_path, [[{"text": "Nothing to do."}], REMARK])
    assert (await h.run()).error is AgentErrorType.NO_PROGRESS


async def test_open_tasks_are_nudged_then_incomplete(tmp_path: Path) -> None:
    create = {"tool": "mcp__wizard__TaskCreate", "input": {"content": "t"}}
    h = Harnessed(tmp_path, [[create], *[[{"text": "..."}]] * 20, REMARK])
    assert (await h.run()).error is AgentErrorType.INCOMPLETE_TASKS
    assert len(h.cli.prompts) == 22


async def test_a_rate_limit_is_classified_as_on_pi(tmp_path: Path) -> None:
    h = Harnessed(tmp_path, [[{"api_error": "429 rate_limit_error: slow down"}]])
    assert (await h.run()).error is AgentErrorType.RATE_LIMIT


async def test_success_reports_tokens_remark_and_the_spinner(tmp_path: Path) -> None:
    h = Harnessed(tmp_path, [DONE, REMARK])
    result = await h.run()
    assert result.ok
    starts = [e.message for e in h.recorder.events if isinstance(e, SpinnerStarted)]
    assert starts == ["Customizing your project..."] and h.recorder.spinner_stops() == [
        "Program set up"
    ]
    (completed,) = h.recorder.analytics("agent completed")
    assert (completed.properties["input_tokens"], completed.properties["output_tokens"]) == (20, 10)
    (remark,) = h.recorder.analytics("wizard remark")
    assert remark.properties["remark"] == "more docs please"


async def test_the_cli_is_configured_to_stay_in_its_lane(tmp_path: Path) -> None:
    h = Harnessed(tmp_path, [DONE, REMARK])
    await h.run()
    options = h.cli.options
    assert options is not None
    assert options.tools == []  # no built-in tool at all: no web, no subagents, no own shell
    assert (tmp_path / "a.txt").read_text() == "x"  # written by wizard's own write tool
    env = options.env
    assert env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"
    assert env["CLAUDE_CODE_MAX_RETRIES"] == "0"
    assert env["ANTHROPIC_BASE_URL"].startswith("http://127.0.0.1:")
    assert all(value == "" for name, value in env.items() if "KEY" in name or "TOKEN" in name)
    assert options.extra_args == {"no-session-persistence": None}


async def test_a_cancelled_run_interrupts_the_cli_before_it_disconnects(tmp_path: Path) -> None:
    import asyncio

    h = Harnessed(tmp_path, [[{"text": "Working."}, {"hold": True}]])
    run = asyncio.ensure_future(AnthropicHarness(client_factory=h.cli.client).run(h.inputs))
    while not h.cli.prompts:  # the turn is under way
        await asyncio.sleep(0.01)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert h.cli.requests == ["initialize", "interrupt"]


async def test_a_marker_in_the_middle_of_a_long_block_stops_the_turn_while_it_streams(
    tmp_path: Path,
) -> None:
    line = "[ABORT] no stripe here\n"
    long = "Checking the project.\n" * 500 + line + "Still checking.\n" * 2000
    h = Harnessed(tmp_path, [[{"text": long}]])
    result = await h.run()
    assert result == AgentResult(AgentErrorType.ABORT, "no stripe here", "skill")
    assert h.cli.requests == ["initialize", "interrupt"]
    streamed = "".join(h.cli.streamed)
    after = streamed[streamed.index(line) + len(line) :]
    # The block stops streaming within a few deltas of the marker's line, not at its end.
    assert len(after) < 200, len(after)


async def test_without_abort_cases_a_marker_mid_block_streams_on(tmp_path: Path) -> None:
    long = "Checking.\n" * 50 + "[ABORT] no stripe here\n" + "Still checking.\n" * 50
    h = Harnessed(tmp_path, [[*WORK, {"text": long}], REMARK], detect_skill_aborts=False)
    result = await h.run()
    assert result.ok and "interrupt" not in h.cli.requests
    assert long in "".join(h.cli.streamed)  # the whole block streamed


def test_a_run_that_ends_while_the_sdk_loads_does_not_wait_for_the_import(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ctrl-C while the SDK is imported (1.5 s here): the run's loop ends at once, the import
    left to its daemon thread (an executor's thread would be waited for at the loop's end)."""
    started, release = threading.Event(), threading.Event()

    def slow_import() -> types.ModuleType:
        started.set()
        release.wait()
        return types.ModuleType("claude_agent_sdk")

    monkeypatch.setattr(harness_module, "load_sdk", slow_import)

    async def cancelled_while_loading() -> None:
        loading = asyncio.ensure_future(AnthropicHarness()._sdk())
        await asyncio.to_thread(started.wait)
        loading.cancel()
        with pytest.raises(asyncio.CancelledError):
            await loading

    ended = threading.Event()
    runner = threading.Thread(target=lambda: (asyncio.run(cancelled_while_loading()), ended.set()))
    runner.start()
    try:
        runner.join(30)  # a guard against a hang, not a timing: the import never ends by itself
        assert ended.is_set(), "the run's loop waited for the SDK's import"
    finally:
        release.set()
        runner.join()


async def test_the_sdk_is_imported_once_the_client_modules_made_ahead_are(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The SDK imports anyio, as the gateway client's modules made ahead do: two threads
    importing one package at once can fail one of the imports (`_DeadlockError`)."""
    import threading
    import time

    from wizard.ahead import Timeline
    from wizard.runner.harness.proxy import GATEWAY_CLIENT

    order: list[str] = []

    def make() -> None:
        time.sleep(0.2)  # still importing when the SDK's turn comes
        order.append("ahead")

    ahead, making = Timeline(), threading.Thread(target=make, daemon=True)
    making.start()
    ahead.start(GATEWAY_CLIENT, making)
    sdk = types.ModuleType("claude_agent_sdk")
    monkeypatch.setattr(harness_module, "load_sdk", lambda: order.append("sdk") or sdk)
    harness = AnthropicHarness()
    harness.ahead = ahead  # as `prepare` keeps the run's
    await harness._sdk()
    assert order == ["ahead", "sdk"]


async def test_a_turn_stopped_by_killing_its_cli_ends_before_the_cli_is_gone(
    tmp_path: Path,
) -> None:
    """The CLI wizard started is killed to stop a turn: the turn ends at once, not once the
    SDK's reader has seen the CLI's pipes close (the kernel frees a large Node process first,
    tens of milliseconds); the session's close leaves the wait for the CLI's end to the
    harness, whose close (after the run's closing snapshot) waits for it."""
    from wizard.runner.harness.anthropic.session import ClaudeSession
    from wizard.runner.harness.driver import reap
    from wizard.runner.harness.gate import ToolGate
    from wizard.runner.harness.types import EngineLaunch
    from wizard.tools.fence import Fence

    class Dying:
        """The CLI's process: killed, it goes only once `gone` is set."""

        pid, returncode = 4242, None

        def __init__(self) -> None:
            self.gone, self.killed = asyncio.Event(), 0

        def kill(self) -> None:
            self.killed += 1

        async def wait(self) -> int:
            await self.gone.wait()
            self.returncode = -9
            return -9

    cli = FakeClaudeCLI([[{"text": "Working on it."}, {"hold": True}]])
    launch = EngineLaunch(tmp_path, "scripted-1", "anthropic-messages", "http://127.0.0.1:9",
                          "t", ToolGate([], Fence(tmp_path)), shell=False)  # fmt: skip
    reaping: list[asyncio.Future[int]] = []
    harness = AnthropicHarness(client_factory=cli.client)
    session = ClaudeSession(launch, harness._sdk, cli.client, reaping=reaping)
    await session.start()
    dying = session._process = Dying()  # type: ignore[assignment]
    turn = asyncio.ensure_future(session.prompt("Set up the program."))
    while not cli.prompts:  # the turn is under way, held open by the CLI
        await asyncio.sleep(0.01)
    await session.abort()
    result = await asyncio.wait_for(turn, 5)  # the reader never ends: only the kill ends it
    assert (result.stop_reason, dying.killed) == ("aborted", 1)
    await asyncio.wait_for(session.close(), 5)
    assert len(reaping) == 1 and not reaping[0].done()  # left to the harness, still dying
    closing = asyncio.ensure_future(reap(reaping))
    await asyncio.sleep(0.05)
    assert not closing.done()  # the harness's close waits for it
    dying.gone.set()
    await asyncio.wait_for(closing, 5)
    assert reaping == [] and dying.returncode == -9
