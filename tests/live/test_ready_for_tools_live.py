"""The real engines, through a whole run: the first model request goes out while the skill
is still being installed, the first tool call waits for the install, and an install that
fails ends the run with its own outcome before any tool ran (against the scripted gateway,
no API key)."""

from __future__ import annotations

import json
import time
from dataclasses import replace
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
from wizard.skills.install import planned_install, skill_file
from wizard.skills.sources import SkillFetchError, SkillSource
from wizard.testing.gateway import ScriptedGateway
from wizard.testing.script import call, reply, said
from wizard.tools.shell import SandboxWrapper

pytestmark = pytest.mark.live

PROGRAM = get_program("transactional-email")
SKILL_MD = str(skill_file(planned_install(PROGRAM.skill)))
TOOL = {"pi": "{}", "anthropic": "mcp__wizard__{}"}


class _AfterTheFirstRequest:
    """A skill source whose fetch waits until the gateway has had its first request, then a
    moment more (the engine's first tool call comes meanwhile), then copies or fails."""

    def __init__(
        self, source: SkillSource, gateway: ScriptedGateway, fails: bool, delay: float
    ) -> None:
        self.source, self.gateway, self.fails, self.delay = source, gateway, fails, delay
        self.waited: float | None = None

    def menu(self) -> Any:
        return self.source.menu()

    def check(self, skill_id: str) -> None:
        self.source.check(skill_id)

    def fetch(self, skill_id: str, dest: Path) -> None:
        started = time.monotonic()
        while not self.gateway.requests and time.monotonic() - started < 30:
            time.sleep(0.01)
        self.waited = time.monotonic() - started if self.gateway.requests else None
        time.sleep(self.delay)
        if self.fails:
            raise SkillFetchError("the skills server answered 503")
        self.source.fetch(skill_id, dest)


async def _run(
    engine: str, project: Path, first: dict[str, Any], fails: bool, delay: float = 0.5,
    engine_timeout: float | None = None, then: tuple[dict[str, Any], ...] = (),
) -> Any:  # fmt: skip
    email_app(project)
    scenario = {"responses": [first, *then, said("Done."), said("[WIZARD-REMARK] none")]}
    async with ScriptedGateway(scenario) as gateway:
        plan = plan_run(PROGRAM, RunFlags(project=project, gateway_url=gateway.url,
                                          harness=engine, no_verify=True), {})  # fmt: skip
        source = _AfterTheFirstRequest(plan.skills, gateway, fails, delay)
        if engine_timeout is not None:
            plan = replace(plan, engine_timeout=engine_timeout)
        harness = make_harness(engine, Timeline())
        outcome = await run_program(replace(plan, skills=source), EventRecorder(),
                                    harness=harness)  # fmt: skip
        requests = list(gateway.requests)
    assert source.waited is not None, "no model request while the skill was being installed"
    alive = [p for p in psutil.Process().children(recursive=True) if p.status() != "zombie"]
    assert alive == [], alive
    return outcome, requests


@pytest.mark.parametrize("engine", ["pi", "anthropic"])
async def test_the_first_request_goes_out_while_the_skill_installs_and_tools_wait(
    engine: str, tmp_path: Path
) -> None:
    (tmp_path / "app.py").write_text("x = 1\n")
    first = reply(call(TOOL[engine].format("read"), path=SKILL_MD))
    outcome, requests = await _run(engine, tmp_path, first, fails=False)
    assert outcome.status == "unverified", outcome  # it read the skill, and changed nothing
    sent = str(requests[1].body)
    assert "name: " in sent and "not found" not in sent.lower()  # the installed SKILL.md


@pytest.mark.parametrize("engine", ["pi", "anthropic"])
async def test_a_skill_install_that_fails_after_the_first_request_runs_no_tool(
    engine: str, tmp_path: Path
) -> None:
    first = reply(
        call(TOOL[engine].format("write"), path="planted.txt", content="x"),
        call(TOOL[engine].format("bash"), command="npm init -y"),
    )
    outcome, _ = await _run(engine, tmp_path, first, fails=True)
    assert (outcome.status, outcome.outro.message) == (
        "failed", "Skill install failed: download-failed"
    )  # fmt: skip
    assert sorted(path.name for path in tmp_path.iterdir()) == ["mailer.py"]


@pytest.mark.parametrize("engine", ["pi", "anthropic"])
async def test_an_install_slower_than_the_engine_timeout_is_waited_for_not_called_a_hang(
    engine: str, tmp_path: Path
) -> None:
    """The engine's first tool call waits for the install: the engine is silent meanwhile,
    which is not a hung engine however long the install takes."""
    first = reply(call(TOOL[engine].format("read"), path=SKILL_MD))
    outcome, requests = await _run(engine, tmp_path, first, fails=False, delay=3.0,
                                   engine_timeout=1.0)  # fmt: skip
    assert outcome.status == "unverified", (outcome.status, outcome.reason)
    assert "name: " in str(requests[1].body)


async def test_the_anthropic_shell_s_first_command_finds_its_sandbox_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through a whole run on the real CLI: the first command's sandbox is made as the
    model's `bash` call streams, once the skill is installed, so no command is wrapped when
    it comes."""
    wrapped: list[str] = []
    wrap = SandboxWrapper.wrapped

    async def counted(self: SandboxWrapper, command: str, folder: Path) -> str:
        wrapped.append(command)
        return await wrap(self, command, folder)

    monkeypatch.setattr(SandboxWrapper, "wrapped", counted)
    first = reply(call(TOOL["anthropic"].format("bash"), command="echo made-ahead"))
    outcome, requests = await _run("anthropic", tmp_path, first, fails=False)
    assert outcome.status == "unverified", (outcome.status, outcome.reason)
    assert "made-ahead" in str(requests[1].body) and wrapped == []
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        ".claude",
        "mailer.py",
    ]  # the skill's


def _with_kept_scripts(project: Path) -> None:
    """`npm run mark` leaves a line in the sandbox's own in-memory /tmp; `npm run seen` shows it,
    if it runs in the same sandbox (the fence lets neither the redirect nor the expansion
    through as a command's own text)."""
    scripts = {"mark": "echo kept-$((6*7)) > /tmp/seen", "seen": "cat /tmp/seen || echo not-kept"}
    (project / "package.json").write_text(json.dumps({"name": "app", "scripts": scripts}))


@pytest.mark.parametrize("engine", ["pi", "anthropic"])
async def test_the_first_command_runs_in_a_sandbox_made_ahead_and_kept_for_the_second(
    engine: str, tmp_path: Path
) -> None:
    """Through a whole run: the first command's sandbox is made as the model's `bash` call
    streams, once the skill is installed, and kept for the second command, which changed
    nothing it was made from (a package manager's first use makes its cache in the run's
    temp folder, which wizard made beforehand: a new name there would throw the sandbox
    away). What the first wrote in the sandbox's own in-memory /tmp is there for the second
    only if both ran in one sandbox: a first command wrapped when it came runs in a sandbox
    of its own, gone with it."""
    _with_kept_scripts(tmp_path)
    bash = TOOL[engine].format("bash")
    first = reply(call(bash, command="npm run mark && echo first-ran"))
    second = reply(call(bash, command="npm run seen"))
    outcome, requests = await _run(engine, tmp_path, first, fails=False, then=(second,))
    assert outcome.status == "unverified", (outcome.status, outcome.reason)
    assert "first-ran" in str(requests[1].body)
    answered = str(requests[2].body["messages"][-1])  # the second command's result
    assert "kept-42" in answered and "No such file" not in answered
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        ".claude",
        "mailer.py",
        "package.json",
    ]


@pytest.mark.parametrize("engine", ["pi", "anthropic"])
async def test_a_command_after_a_file_tool_runs_in_a_sandbox_made_while_the_model_thought(
    engine: str, tmp_path: Path
) -> None:
    """A file tool's call throws away the sandbox that stood (it must find no placeholders,
    and what it writes must be in the next sandbox); once it has ended, the next command's
    is made while the model thinks, and kept for the command after it: what the first of
    them leaves in the sandbox's in-memory /tmp is there for the second."""
    _with_kept_scripts(tmp_path)
    tool = TOOL[engine]
    first = reply(call(tool.format("write"), path="notes.txt", content="written first\n"),
                  call(tool.format("bash"), command="npm run mark && cat notes.txt"))  # fmt: skip
    second = reply(call(tool.format("bash"), command="npm run seen"))
    outcome, requests = await _run(engine, tmp_path, first, fails=False, then=(second,))
    assert outcome.status == "succeeded", (outcome.status, outcome.reason)  # it wrote
    assert "written first" in str(requests[1].body)  # the command saw what the tool wrote
    answered = str(requests[2].body["messages"][-1])
    assert "kept-42" in answered and "No such file" not in answered
