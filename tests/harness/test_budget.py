"""Budgets: what they take, and each one ending a live run on the real engine at its next
model request, as WIZARD_BUDGET_EXCEEDED (never success)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from wizard.ahead import Timeline
from wizard.errors import UsageError
from wizard.events import EventRecorder
from wizard.outcome import AgentErrorType
from wizard.runner.harness.types import GatewaySettings, RunInputs
from wizard.runner.harness.usage import (
    PRICES,
    Budget,
    BudgetFlags,
    RunSpend,
    duration_seconds,
    run_budget,
)
from wizard.testing.gateway import ScriptedGateway
from wizard.testing.script import call, reply, said


@pytest.mark.parametrize(("text", "seconds"), [("90", 90), ("90s", 90), ("10m", 600),
                                               ("1h30m", 5400), ("1.5m", 90)])  # fmt: skip
def test_durations(text: str, seconds: float) -> None:
    assert duration_seconds(text) == seconds


@pytest.mark.parametrize("text", ["", "soon", "10x", "0", "m"])
def test_what_is_not_a_duration_is_a_usage_error(text: str) -> None:
    with pytest.raises(UsageError, match="is not a duration"):
        duration_seconds(text)


def test_flags_win_over_the_environment_and_a_cost_budget_needs_a_price() -> None:
    env = {"WIZARD_MAX_TURNS": "9", "WIZARD_MAX_COST": "1.5", "WIZARD_MAX_TIME": "2m"}
    budget = run_budget(BudgetFlags(max_turns=3), env, "claude-sonnet-4-6", PRICES)
    assert budget == Budget(max_turns=3, max_cost=1.5, max_seconds=120)
    with pytest.raises(UsageError, match="needs the price of the model my-model"):
        run_budget(BudgetFlags(max_cost=1.0), {}, "my-model", PRICES)
    with pytest.raises(UsageError, match="WIZARD_MAX_TURNS"):
        run_budget(BudgetFlags(), {"WIZARD_MAX_TURNS": "0"}, "m", PRICES)


LONG = [reply(call("read", path="app.py")), reply(call("read", path="app.py")),
        said("Done."), said("[WIZARD-REMARK] -")]  # fmt: skip


@pytest.mark.live
@pytest.mark.parametrize(
    ("budget", "words"),
    [
        (Budget(max_turns=1), "the turn budget (1) is spent: 1 model turns"),
        (Budget(max_cost=0.000001), "the cost budget ($1e-06) is spent"),
        (Budget(max_seconds=5), "the time budget (5 s) is spent"),
    ],
    ids=["turns", "cost", "time"],
)
async def test_a_spent_budget_ends_a_live_run_at_its_next_request(
    tmp_path: Path, budget: Budget, words: str
) -> None:
    from wizard.engines.bundle import installed_bundle
    from wizard.runner.harness.pi.harness import PiHarness

    if installed_bundle() is None:
        if os.environ.get("CI"):
            pytest.fail("pi is not installed")
        pytest.skip("pi is not installed")
    (tmp_path / "app.py").write_text("print('hi')\n")
    # The first reply takes 6 s: the time budget (5 s, counted from the run's start) is spent
    # when the next request would go out.
    first: dict[str, Any] = {**LONG[0], "latency_ms": 6000 if budget.max_seconds else 0}
    model = "claude-sonnet-4-6"
    async with ScriptedGateway({"responses": [first, *LONG[1:]]}) as gateway:
        inputs = RunInputs(
            project_dir=tmp_path, prompt="Set up.", model=model,
            gateway=GatewaySettings(url=gateway.url, retries=0), sink=EventRecorder(),
            spend=RunSpend(budget, model, PRICES),
        )  # fmt: skip
        harness = PiHarness()
        try:
            result = await harness.run(inputs)
        finally:
            await harness.close()  # the run's end: its hosts gone
    assert result.error is AgentErrorType.BUDGET_EXCEEDED, result
    assert words in (result.message or "")
    assert len(gateway.requests) == 1  # the request after the budget never reached it
    assert result.usage is not None and result.usage.model_requests == 1
    assert result.usage.turns == 1  # the refused request's error is no turn, as for the budget


@pytest.mark.parametrize("text", ["1.2.3m", "10x", "m", "1m 30s", "0", "-5"])
def test_a_duration_that_is_not_one_is_a_usage_error(text: str) -> None:
    from wizard.errors import UsageError
    from wizard.runner.harness.usage import duration_seconds

    with pytest.raises(UsageError, match="is not a duration"):
        duration_seconds(text)


@pytest.mark.parametrize(("text", "seconds"), [("90", 90), ("10m", 600), ("1.5h", 5400),
                                               ("1h30m", 5400), (" 2M ", 120)])  # fmt: skip
def test_durations_in_seconds_minutes_and_hours(text: str, seconds: float) -> None:
    from wizard.runner.harness.usage import duration_seconds

    assert duration_seconds(text) == seconds


@pytest.mark.live
@pytest.mark.parametrize("engine", ["pi", "anthropic"])
async def test_the_time_budget_is_a_deadline_that_stops_the_running_command(
    tmp_path: Path, engine: str
) -> None:
    """`--max-time 20s` with a 120 s command ran to 133 s, once ending "succeeded": the
    deadline now stops the turn and the command running in it, and the run ends as a budget
    stop. The command would have written `late.txt` had it run on; nothing asks the gateway
    again."""
    import tempfile

    from wizard.engines.bundle import installed_bundle
    from wizard.runner.harness.registry import make_harness
    from wizard.tools.sandbox import build_policy

    if installed_bundle() is None:
        pytest.fail("pi is not installed") if os.environ.get("CI") else pytest.skip("no pi")
    if engine == "anthropic":
        pytest.importorskip("claude_agent_sdk")
    project = tmp_path / "project"
    project.mkdir()
    tool = (lambda name: name) if engine == "pi" else (lambda name: f"mcp__wizard__{name}")
    late = "import pathlib, time\ntime.sleep(20)\npathlib.Path('late.txt').write_text('x')\n"
    command = "python3 late.py"
    scenario = {"responses": [reply(call(tool("write"), path="late.py", content=late)),
                              reply(call(tool("bash"), command=command, timeout=60)),
                              *LONG[2:]]}  # fmt: skip
    model = "claude-sonnet-4-6"
    with tempfile.TemporaryDirectory(prefix="wizard-deadline-") as temp:
        async with ScriptedGateway(scenario) as gateway:
            inputs = RunInputs(
                project_dir=project, prompt="Set up.", model=model,
                gateway=GatewaySettings(url=gateway.url, retries=0), sink=EventRecorder(),
                spend=RunSpend(Budget(max_seconds=3), model, PRICES),
                sandbox=build_policy(project, Path(temp)),
            )  # fmt: skip
            harness = make_harness(engine, Timeline())
            try:
                result = await harness.run(inputs)
            finally:
                await harness.close()
    assert result.error is AgentErrorType.BUDGET_EXCEEDED, result
    assert "the time budget (3 s) is spent" in (result.message or "")
    assert len(gateway.requests) == 2  # the reply that called the command, nothing after
    assert not (project / "late.txt").exists()
    assert subprocess.run(["pgrep", "-f", command], capture_output=True).stdout == b""
