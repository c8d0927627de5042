"""The skill's install (after the journal's first snapshot) goes on while the engine starts
and asks its first request; every tool call waits for it, and an install that fails ends the
run with its own outcome before any tool ran."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from wizard.events import EventRecorder
from wizard.programs import get_program
from wizard.runner import RunFlags, plan_run, run_program
from wizard.runner.harness.gate import UNPREPARED
from wizard.runner.harness.pi.harness import PiHarness
from wizard.skills.install import planned_install, skill_file
from wizard.skills.sources import SkillFetchError, SkillSource
from wizard.testing.fake_session import FakeSession
from wizard.testing.script import call, reply, said

PROGRAM = get_program("transactional-email")
SKILL_MD = str(skill_file(planned_install(PROGRAM.skill)))


class _AfterThePrompt:
    """A skill source whose fetch waits until the engine has been prompted (fails the test
    if it never is while the install is under way), then copies the skill or fails."""

    def __init__(self, source: SkillSource, engine: FakeSession, *, fails: bool = False) -> None:
        self.source, self.engine, self.fails = source, engine, fails

    def menu(self) -> Any:
        return self.source.menu()

    def check(self, skill_id: str) -> None:
        self.source.check(skill_id)

    def fetch(self, skill_id: str, dest: Path) -> None:
        deadline = time.monotonic() + 10
        while not self.engine.prompts:
            assert time.monotonic() < deadline, "the engine was not prompted during the install"
            time.sleep(0.01)
        time.sleep(0.3)  # the engine's first tool call comes meanwhile, and must wait
        if self.fails:
            raise SkillFetchError("the skills server answered 503")
        self.source.fetch(skill_id, dest)


def _run(project: Path, turns: list[Any], *, fails: bool = False) -> tuple[Any, FakeSession]:
    engine = FakeSession(turns)
    plan = plan_run(PROGRAM, RunFlags(project=project, gateway_url="http://127.0.0.1:9"),
                    {"WIZARD_SANDBOX": "off"})  # fmt: skip
    plan = replace(plan, skills=_AfterThePrompt(plan.skills, engine, fails=fails))
    return plan, engine


async def test_the_engine_is_prompted_while_the_skill_installs_and_its_first_tool_waits(
    tmp_path: Path,
) -> None:
    (tmp_path / "app.py").write_text("x = 1\n")
    turns = [[reply(call("read", path=SKILL_MD)), said("Done.")], [said("-")]]
    plan, engine = _run(tmp_path, turns)
    await run_program(plan, EventRecorder(), run_id="ready", harness=PiHarness(engine))
    engine.assert_complete()
    (read,) = [e for e in engine.events if e["type"] == "tool_end"]
    assert not read["isError"] and "name:" in read["result"]  # the installed SKILL.md


async def test_a_skill_that_cannot_be_installed_ends_the_run_before_any_tool_ran(
    tmp_path: Path,
) -> None:
    turns = [[reply(call("write", path="planted.txt", content="x")), said("Done.")], [said("-")]]
    plan, engine = _run(tmp_path, turns, fails=True)
    outcome = await run_program(plan, EventRecorder(), run_id="unready", harness=PiHarness(engine))
    assert outcome.status == "failed"
    assert outcome.reason is not None and outcome.reason.startswith("Downloading the skill failed")
    assert outcome.outro is not None
    assert outcome.outro.message == "Skill install failed: download-failed"
    assert not (tmp_path / "planted.txt").exists()
    assert engine.closed
    assert all(e.get("result") == UNPREPARED for e in engine.events if e["type"] == "tool_end")
