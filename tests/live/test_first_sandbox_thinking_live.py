"""The real engines, through a whole run: the first command's sandbox is made while the model
thinks over its first reply, not once its `bash` call comes (against the scripted gateway, no
API key)."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.integrations import email_app
from wizard.ahead import Timeline
from wizard.events import EventRecorder
from wizard.programs import get_program
from wizard.runner import RunFlags, plan_run, run_program
from wizard.runner.harness.registry import make_harness
from wizard.testing.gateway import ScriptedGateway
from wizard.testing.script import call, reply, said

pytestmark = pytest.mark.live

PROGRAM = get_program("transactional-email")
TOOL = {"pi": "bash", "anthropic": "mcp__wizard__bash"}
THINKS_S = 3.0


@pytest.mark.parametrize("engine", ["pi", "anthropic"])
async def test_the_first_command_s_sandbox_is_made_while_the_model_thinks(
    engine: str, tmp_path: Path
) -> None:
    """The model takes three seconds over its first reply, a `bash` call. The sandbox's own
    in-memory /tmp is mounted as the sandbox is made: the command finds it made before the
    reply was sent (it was made once the request had gone a tenth of a second unanswered, and
    the run was ready for tools), where a sandbox made as the call streamed would be younger
    than the time since."""
    scripts = {"age": 'echo "made=$(stat -c %.3Y /tmp) now=$(date +%s.%N)"'}
    (tmp_path / "package.json").write_text(json.dumps({"name": "app", "scripts": scripts}))
    first = reply(call(TOOL[engine], command="npm run age"), latency_ms=THINKS_S * 1000)
    outcome, requests = await _run(engine, tmp_path, first)
    assert outcome.status == "unverified", (outcome.status, outcome.reason)
    found = re.search(r"made=([\d.]+) now=([\d.]+)", str(requests[1].body["messages"][-1]))
    assert found is not None, requests[1].body["messages"][-1]
    age = float(found[2]) - float(found[1])
    # By events, not by a threshold of the wall clock (a loaded machine makes a sandbox
    # slowly): it was made before the reply that called the command was sent. The command
    # ran before the next request arrived, so that request's arrival less the sandbox's age
    # is no earlier than when it was made; the reply went out `THINKS_S` after the first.
    made_by = requests[1].received_at - age
    assert made_by < requests[0].received_at + THINKS_S, (age, made_by, requests[0].received_at)
    assert age < THINKS_S + 60, age  # made for this run, not one left from before


@pytest.mark.parametrize("engine", ["pi", "anthropic"])
async def test_a_run_that_ends_on_its_first_reply_leaves_nothing_of_the_sandbox_made_meanwhile(
    engine: str, tmp_path: Path
) -> None:
    """The model thinks two seconds, then says `[ABORT]`: the sandbox made meanwhile stood
    its placeholders in the project (an empty `.bashrc`, `.gitconfig`…); they are gone at the
    end, and the run's changes are the skill's alone."""
    (tmp_path / "app.py").write_text("x = 1\n")
    first = said("[ABORT] no email provider here", latency_ms=2000)
    seen: set[str] = set()

    async def look() -> None:
        while True:
            seen.update(path.name for path in tmp_path.iterdir())
            await asyncio.sleep(0.02)

    looking = asyncio.ensure_future(look())
    try:
        outcome, _ = await _run(engine, tmp_path, first)
    finally:
        looking.cancel()
    assert (outcome.status, outcome.reason) == ("aborted", "no email provider here")
    assert ".bashrc" in seen, seen  # the sandbox made while the model thought
    assert sorted(path.name for path in tmp_path.iterdir()) == [".claude", "app.py", "mailer.py"]
    assert all(path.startswith(".claude/skills/") for path in outcome.changed_files), outcome
    assert outcome.repositories_added == () and not outcome.dependency_changes


async def _run(engine: str, project: Path, first: dict[str, Any]) -> tuple[Any, list[Any]]:
    email_app(project)
    scenario = {"responses": [first, said("Done."), said("[WIZARD-REMARK] none")]}
    async with ScriptedGateway(scenario) as gateway:
        plan = plan_run(PROGRAM, RunFlags(project=project, gateway_url=gateway.url,
                                          harness=engine, no_verify=True), {})  # fmt: skip
        outcome = await run_program(plan, EventRecorder(), harness=make_harness(engine, Timeline()))
        requests = list(gateway.requests)
    alive = [p for p in psutil.Process().children(recursive=True) if p.status() != "zombie"]
    assert alive == [], alive
    return outcome, requests
