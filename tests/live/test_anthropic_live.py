"""The anthropic harness live: the SDK's bundled Claude Code CLI against the scripted gateway's
`/v1/messages?beta=true` on 127.0.0.1, through wizard's proxy, commands in the OS sandbox."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

if os.environ.get("CI"):  # CI installs the extra: the live tests must run there
    import claude_agent_sdk  # noqa: F401
else:
    pytest.importorskip("claude_agent_sdk")

from wizard.events import EventRecorder
from wizard.outcome import AgentErrorType, AgentResult
from wizard.programs import get_program
from wizard.runner.harness.anthropic.harness import AnthropicHarness
from wizard.runner.harness.types import GatewaySettings, RunInputs
from wizard.runner.sequence.context import RunContext
from wizard.runner.sequence.orchestrator.prompts import SEED_LINE
from wizard.runner.sequence.orchestrator.sequence import run_orchestrator
from wizard.runner.switchboard import Binding
from wizard.skills.sources import BundledSkills
from wizard.testing.gateway import ScriptedGateway
from wizard.testing.script import call, said
from wizard.tools.sandbox import build_policy

pytestmark = pytest.mark.live

KEY = "sk-gateway-secret-8e1f"


REMARK = said("[WIZARD-REMARK] fine")


async def run_anthropic(
    project: Path, scenario: dict[str, Any], *, detect: bool = True
) -> tuple[AgentResult, ScriptedGateway, EventRecorder]:
    recorder = EventRecorder()
    with tempfile.TemporaryDirectory(prefix="wizard-live-") as temp:
        async with ScriptedGateway(scenario) as gateway:
            inputs = RunInputs(
                project_dir=project,
                prompt="Set up the program.",
                model="scripted-1",
                gateway=GatewaySettings(url=gateway.url, key=KEY, retries=0),
                sink=recorder,
                sandbox=build_policy(project, Path(temp)),
                detect_skill_aborts=detect,
            )
            harness = AnthropicHarness()
            try:
                result = await harness.run(inputs)
            finally:
                await harness.close()  # as every run's end: the CLIs it killed are gone
            assert await gateway.settled()
    return result, gateway, recorder


def _sent(gateway: ScriptedGateway) -> str:
    return "\n".join(json.dumps(r.body) for r in gateway.requests)


async def test_success_with_a_bash_call(tmp_path: Path) -> None:
    scenario = {
        "responses": [
            {"blocks": [{"text": "[STATUS] Looking\n"}, call("mcp__wizard__bash", command="ls")]},
            {
                "blocks": [
                    call("mcp__wizard__write", path=str(tmp_path / "wizard.txt"), content="set\n")
                ]
            },
            said("Done."),
            REMARK,
        ]
    }
    (tmp_path / "app.py").write_text("print('hi')\n")
    result, gateway, recorder = await run_anthropic(tmp_path, scenario)
    assert result.ok, result
    assert (tmp_path / "wizard.txt").read_text() == "set\n"
    gateway.assert_complete()
    assert "app.py" in _sent(gateway)  # the sandboxed `ls` output went back to the model
    assert [e.name for e in recorder.analytics()] == ["wizard remark", "agent completed"]


STOP_LINE = "[ABORT] could not find a stripe integration\n"
STOPS = {
    # the marker ends its block; another block keeps coming
    "at-a-block-end": [
        {"text": "No Stripe calls here.\n" + STOP_LINE},
        {"text": "tail of a reply that keeps coming " * 200},
    ],
    # the marker in the middle of one long block: seen while the block streams
    "mid-block": [{"text": "Checking the project.\n" * 40 + STOP_LINE + "Still going.\n" * 800}],
}


@pytest.mark.parametrize("where", list(STOPS))
async def test_an_abort_with_cases_interrupts_after_one_request(
    tmp_path: Path, where: str, capsys: pytest.CaptureFixture[str]
) -> None:
    reply = {"blocks": STOPS[where], "chunk_chars": 16, "delay_ms": 5}
    scenario = {"responses": [reply, said("must never be requested")]}
    result, gateway, _ = await run_anthropic(tmp_path, scenario)
    assert (result.error, result.message) == (
        AgentErrorType.ABORT,
        "could not find a stripe integration",
    )
    assert len(gateway.requests) == 1
    assert gateway.requests[0].client_disconnected  # the stream was cut
    # The CLI wizard killed to stop the turn: whatever the SDK says about it (its "Fatal
    # error in message reader", when its reader sees the CLI gone before the session has
    # closed) goes to the run's debug log, never under the aborted screen.
    assert "Fatal error" not in capsys.readouterr().err


async def test_a_skill_run_without_cases_ignores_the_marker(tmp_path: Path) -> None:
    scenario = {
        "responses": [
            {
                "blocks": [
                    {"text": "[ABORT] not a stop here\n"},
                    call("mcp__wizard__bash", command="ls"),
                ]
            },
            said("Done."),
            REMARK,
        ]
    }
    result, gateway, _ = await run_anthropic(tmp_path, scenario, detect=False)
    assert result.ok, result
    gateway.assert_complete()


async def test_a_script_the_agent_runs_cannot_print_the_gateway_key(tmp_path: Path) -> None:
    snoop = (
        "import os, pathlib\n"
        "print(sorted(os.environ.items()))\n"
        "for p in pathlib.Path('/proc').glob('[0-9]*/environ'):\n"
        "    try:\n        print(p.read_bytes())\n    except OSError:\n        pass\n"
    )
    scenario = {
        "responses": [
            {"blocks": [call("mcp__wizard__write", path="snoop.py", content=snoop)]},
            {"blocks": [call("mcp__wizard__bash", command="python3 snoop.py")]},
            said("Done."),
            REMARK,
        ]
    }
    os.environ["WIZARD_GATEWAY_KEY"] = KEY  # as a user would have it set
    try:
        result, gateway, _ = await run_anthropic(tmp_path, scenario)
    finally:
        del os.environ["WIZARD_GATEWAY_KEY"]
    assert result.ok, result
    sent = _sent(gateway)
    assert "PATH" in sent  # the script ran and its output reached the model
    assert KEY not in sent


async def orchestrate(tmp_path: Path, task_responses: list[Any]) -> tuple[Any, ScriptedGateway]:
    """revenue-analytics (which declares abort cases) planned as one task, on this harness."""
    enqueue = call("mcp__wizard__enqueue_task", type="tag-customers", label="Tag", id="tag")
    scenario = {
        "conversations": [
            {"match": SEED_LINE, "responses": [{"blocks": [enqueue]}, said("Planned.")]},
            {"match": "# Task tag:", "responses": task_responses},
        ]
    }
    project = tmp_path / "project"
    project.mkdir()
    async with ScriptedGateway(scenario) as gateway:
        ctx = RunContext(
            program=get_program("revenue-analytics"),
            project_dir=project,
            binding=Binding("orchestrator", "anthropic", "scripted-1"),
            gateway=GatewaySettings(url=gateway.url, retries=0),
            skills=BundledSkills(),
            sink=EventRecorder(),
            run_id=f"live-anthropic-{tmp_path.name}",
        )
        harness = AnthropicHarness()
        try:
            outcome = await run_orchestrator(ctx, harness)
        finally:
            await harness.close()
        assert await gateway.settled()
    return outcome, gateway


async def test_an_orchestrated_run_on_the_anthropic_harness(tmp_path: Path) -> None:
    done = call("mcp__wizard__complete_task", status="done", summary="tagged")
    outcome, gateway = await orchestrate(tmp_path, [{"blocks": [done]}])  # the report ends it
    assert outcome.status == "succeeded", outcome
    assert [t["status"] for t in outcome.tasks] == ["done"]
    gateway.assert_complete()


async def test_a_declared_stop_in_an_anthropic_task_aborts_the_run(tmp_path: Path) -> None:
    """The stop line, then complete_task(done) in the same reply: that ended "1/1 steps
    completed", exit 0, on this harness. The marker ends the run; complete_task never runs."""
    done = call("mcp__wizard__complete_task", status="done", summary="tagged")
    stop = {"blocks": [{"text": "[ABORT] could not find a posthog distinct_id\n"}, done]}
    outcome, gateway = await orchestrate(tmp_path, [stop, said("never asked")])
    assert (outcome.status, outcome.reason) == ("aborted", "could not find a posthog distinct_id")
    assert [(t["status"], t["error"]) for t in outcome.tasks] == [("failed", "aborted")]
    task_requests = [r for r in gateway.requests if "# Task tag:" in json.dumps(r.body)]
    assert len(task_requests) == 1  # not retried, nothing asked after the marker


async def test_a_reset_inside_a_write_leaves_the_file_and_asks_nothing_more(
    tmp_path: Path,
) -> None:
    original = "".join(f"line {n}\n" for n in range(600))
    (tmp_path / "config.txt").write_text(original)
    content = "".join(f"new line {n}\n" for n in range(600))
    write = call("mcp__wizard__write", path="config.txt", content=content)
    broken = {"blocks": [write], "chunk_chars": 16, "fault": "reset", "fault_after_frames": 40}
    scenario = {"responses": [broken, said("Done."), REMARK]}
    result, gateway, _ = await run_anthropic(tmp_path, scenario)
    assert result.error is AgentErrorType.API_ERROR, result
    assert (tmp_path / "config.txt").read_text() == original
    assert len(gateway.requests) == 1  # no request follows the fault
