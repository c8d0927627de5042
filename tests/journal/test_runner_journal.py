"""The runner journals every run, and a missing git turns the journal off, not the run."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.integrations import email_app, email_sent
from wizard.events import EventRecorder, LogLine
from wizard.journal import Journal
from wizard.outcome import Outcome
from wizard.programs import get_program
from wizard.runner import RunFlags, plan_run, run_program
from wizard.runner.harness.pi.harness import PiHarness
from wizard.testing.fake_session import FakeSession

WRITE = {"tool_call": {"name": "write", "arguments": {"path": "a.txt", "content": "x"}}}
TURNS = [
    [{"blocks": [WRITE, *email_sent()]}, {"blocks": [{"text": "Done."}]}],
    [{"blocks": [{"text": "[WIZARD-REMARK] -"}]}],
]


async def _run(project: Path, recorder: EventRecorder) -> Outcome:
    email_app(project)
    flags = RunFlags(project=project, gateway_url="http://127.0.0.1:9")
    plan = plan_run(get_program("transactional-email"), flags, {})
    harness = PiHarness(session_factory=FakeSession(TURNS))
    return await run_program(plan, recorder, run_id="run-under-test", harness=harness)


async def test_a_run_is_journaled(tmp_path: Path) -> None:
    recorder = EventRecorder()
    outcome = await _run(tmp_path, recorder)
    assert outcome.status == "succeeded"
    record = Journal(tmp_path).get("run-under-test")
    assert record is not None and record.status == "succeeded"
    # The skill wizard installed, and the file the agent wrote with wizard's write tool.
    assert record.changed == [".claude/skills/transactional-email/.wizard-skill",
                              ".claude/skills/transactional-email/SKILL.md",
                              ".posthog/email-probe.json", "a.txt", "mailer.py"]  # fmt: skip


async def test_without_git_the_run_goes_on_and_says_undo_is_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"  # node and the sandbox's tools only: git cannot be found
    bin_dir.mkdir()
    for tool in ("node", "bwrap", "socat", "rg"):
        found = shutil.which(tool)
        assert found is not None, tool
        os.symlink(found, bin_dir / tool)
    monkeypatch.setenv("PATH", str(bin_dir))
    project = tmp_path / "project"
    project.mkdir()
    recorder = EventRecorder()
    outcome = await _run(project, recorder)
    assert outcome.status == "succeeded", (outcome.reason, outcome.verification)
    warnings = [e.message for e in recorder.events if isinstance(e, LogLine)]
    assert any("git was not found" in w and "wizard undo" in w for w in warnings)
    assert Journal(project).records() == []
