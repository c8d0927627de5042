"""`run_program`: says once, before the agent starts, what the run uses."""

from __future__ import annotations

from pathlib import Path

from wizard.events import EventRecorder, RunStarted
from wizard.programs import get_program
from wizard.runner import RunRequest, run_program
from wizard.runner.gateway import GatewayFlags
from wizard.runner.harness.pi.harness import PiHarness
from wizard.skills.sources import BundledSkills
from wizard.testing.fake_session import FakePiSession
from wizard.testing.script import call, reply, said


async def test_a_run_says_what_it_uses_before_the_agent_starts(tmp_path: Path) -> None:
    recorder = EventRecorder()
    request = RunRequest(
        program=get_program("transactional-email"),
        project_dir=tmp_path,
        skills=BundledSkills(),
        sink=recorder,
        environ={"WIZARD_SANDBOX": "off"},
        gateway=GatewayFlags(url="http://127.0.0.1:9"),
        run_id="run-under-test",
    )
    turns = [[reply(call("write", path="a.txt", content="x")), said("Done.")], [said("-")]]
    await run_program(request, PiHarness(session_factory=FakePiSession(turns)))
    (started,) = [e for e in recorder.events if isinstance(e, RunStarted)]
    assert started == RunStarted(
        "transactional-email", str(tmp_path.resolve()), "pi", "linear", "claude-sonnet-4-6",
        "http://127.0.0.1:9", sandbox=False,
    )  # fmt: skip
    assert started.summary() == (
        f"transactional-email on {tmp_path.resolve()} · pi · linear · claude-sonnet-4-6 via "
        "http://127.0.0.1:9 · sandbox OFF"
    )
    first_spinner = next(i for i, e in enumerate(recorder.events) if e.kind == "spinner_started")
    assert recorder.events.index(started) < first_spinner
