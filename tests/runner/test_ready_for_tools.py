"""The skill's install (after the journal's first snapshot) goes on while the engine starts
and asks its first request; every tool call waits for it, and an install that fails ends the
run with its own outcome before any tool ran."""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.integrations import email_app
from wizard.errors import EngineError
from wizard.events import EventRecorder
from wizard.journal import Journal
from wizard.programs import get_program
from wizard.runner import RunFlags, plan_run, run_program
from wizard.runner.harness.gate import UNPREPARED
from wizard.runner.harness.pi.harness import PiHarness
from wizard.runner.journaling import RunJournal
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
    email_app(project)
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


async def test_a_ctrl_c_while_the_first_snapshot_is_taken_finishes_it_then_records_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run is cancelled (as a Ctrl-C cancels it) while the engine has been prompted and the
    journal's first snapshot is still being taken: the snapshot is finished, the run recorded
    as cancelled, no skill installed and nothing of the agent's run."""
    taking, release = threading.Event(), threading.Event()
    opened = RunJournal.open

    def slow_open(*args: Any) -> RunJournal:
        taking.set()
        assert release.wait(10), "the test never let the snapshot finish"
        return opened(*args)

    monkeypatch.setattr(RunJournal, "open", slow_open)
    (tmp_path / "app.py").write_text("x = 1\n")
    plan, engine = _run(tmp_path, [[reply(call("write", path="planted.txt", content="x")),
                                    said("-")]])  # fmt: skip
    going = asyncio.ensure_future(
        run_program(plan, EventRecorder(), run_id="cut", harness=PiHarness(engine))
    )
    deadline = time.monotonic() + 10
    while not (taking.is_set() and engine.prompts):
        assert time.monotonic() < deadline and not going.done(), "never prompted while taking"
        await asyncio.sleep(0.01)
    going.cancel()
    await asyncio.sleep(0.2)  # the cancellation waits for the snapshot under way
    assert not going.done()
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await going
    record = Journal(tmp_path).get("cut")
    assert record is not None and record.status == "cancelled"
    assert record.changed == []
    assert not (tmp_path / "planted.txt").exists()
    assert not (tmp_path / SKILL_MD).exists()
    assert engine.closed


class _SlowToStart(FakeSession):
    """An engine whose start takes a while, noting whether the journal's first snapshot was
    taken by then; with `waits`, its start waits (10 s at most) for the snapshot instead; with
    `fails`, it does not start."""

    def __init__(
        self, turns: list[Any], taken: threading.Event, *, waits: bool, fails: bool
    ) -> None:
        super().__init__(turns)
        self.taken, self.waits, self.fails = taken, waits, fails
        self.taken_before_start: bool | None = None

    async def start(self) -> None:
        deadline = time.monotonic() + (10 if self.waits else 0.3)
        while not self.taken.is_set() and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        self.taken_before_start = self.taken.is_set()
        if self.fails:
            raise EngineError("the engine did not start")
        await super().start()


async def _run_noting_the_snapshot(
    project: Path,
    monkeypatch: pytest.MonkeyPatch,
    run_id: str,
    *,
    waits: bool = False,
    fails: bool = False,
) -> tuple[Any, _SlowToStart]:
    taken = threading.Event()
    opened = RunJournal.open

    def noted_open(*args: Any) -> RunJournal:
        journal = opened(*args)
        taken.set()
        return journal

    monkeypatch.setattr(RunJournal, "open", noted_open)
    email_app(project)
    turns = [[reply(call("read", path=SKILL_MD)), said("Done.")], [said("-")]]
    engine = _SlowToStart(turns, taken, waits=waits, fails=fails)
    plan = plan_run(PROGRAM, RunFlags(project=project, gateway_url="http://127.0.0.1:9"),
                    {"WIZARD_SANDBOX": "off"})  # fmt: skip
    outcome = await run_program(plan, EventRecorder(), run_id=run_id, harness=PiHarness(engine))
    return outcome, engine


async def test_a_new_project_s_first_snapshot_waits_for_the_engine_to_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A project the journal has never snapshotted has every file read and stored: that waits
    until the engine has started (it would slow its start), and the first tool call waits for
    it. A project snapshotted before is snapshotted at once, while the engine starts."""
    (tmp_path / "app.py").write_text("x = 1\n")
    outcome, engine = await _run_noting_the_snapshot(tmp_path, monkeypatch, "new")
    assert engine.taken_before_start is False
    (read,) = [e for e in engine.events if e["type"] == "tool_end"]
    assert not read["isError"] and "name:" in read["result"]  # the skill, installed after it
    record = Journal(tmp_path).get("new")
    assert record is not None and record.status == outcome.status
    # The next run finds the first one's snapshot: its own is taken while the engine starts.
    _, engine = await _run_noting_the_snapshot(tmp_path, monkeypatch, "known", waits=True)
    assert engine.taken_before_start is True


async def test_a_new_project_whose_engine_does_not_start_is_still_snapshotted_and_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "app.py").write_text("x = 1\n")
    outcome, engine = await _run_noting_the_snapshot(tmp_path, monkeypatch, "down", fails=True)
    assert engine.taken_before_start is False
    assert outcome.status == "failed" and "did not start" in (outcome.reason or "")
    record = Journal(tmp_path).get("down")
    assert record is not None and record.status == "failed"
    # The skill, installed once the snapshot was taken, is the run's one change.
    assert SKILL_MD in record.changed and all(
        path.startswith(str(Path(SKILL_MD).parent)) for path in record.changed
    )


async def test_a_new_project_whose_sequence_fails_before_its_conversation_is_still_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken(*args: Any) -> Any:
        raise RuntimeError("the sequence broke before its conversation")

    monkeypatch.setattr("wizard.runner.run.run_linear", broken)
    (tmp_path / "app.py").write_text("x = 1\n")
    plan, engine = _run(tmp_path, [])
    outcome = await asyncio.wait_for(
        run_program(plan, EventRecorder(), run_id="broke", harness=PiHarness(engine)), 30
    )
    assert outcome.status == "failed" and not engine.started
    record = Journal(tmp_path).get("broke")
    assert record is not None and record.status == "failed" and record.changed == []
