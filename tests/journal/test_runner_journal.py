"""The runner journals every run, and a missing git turns the journal off, not the run."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.integrations import email_sent
from wizard.events import EventRecorder, LogLine
from wizard.journal import Journal
from wizard.programs import get_program
from wizard.runner import RunRequest, run_program
from wizard.runner.gateway import GatewayFlags
from wizard.runner.harness.pi.harness import PiHarness
from wizard.skills.sources import BundledSkills
from wizard.testing.fake_session import FakePiSession

WRITE = {"tool_call": {"name": "write", "arguments": {"path": "a.txt", "content": "x"}}}
TURNS = [
    [{"blocks": [WRITE, *email_sent()]}, {"blocks": [{"text": "Done."}]}],
    [{"blocks": [{"text": "[WIZARD-REMARK] -"}]}],
]


def _request(project: Path, recorder: EventRecorder) -> RunRequest:
    return RunRequest(
        program=get_program("transactional-email"),
        project_dir=project,
        skills=BundledSkills(),
        sink=recorder,
        environ={},
        gateway=GatewayFlags(url="http://127.0.0.1:9"),
        run_id="run-under-test",
    )


async def test_a_run_is_journaled(tmp_path: Path) -> None:
    recorder = EventRecorder()
    fake = FakePiSession(TURNS)
    outcome = await run_program(_request(tmp_path, recorder), PiHarness(session_factory=fake))
    assert outcome.status == "succeeded"
    record = Journal(tmp_path).get("run-under-test")
    assert record is not None and record.status == "succeeded"
    # The skill wizard installed, and the file the agent wrote with wizard's write tool.
    assert record.changed == [".claude/skills/transactional-email/.wizard-skill",
                              ".claude/skills/transactional-email/SKILL.md",
                              ".posthog/email-probe.json", "a.txt",
                              "wizard_test_sender.py"]  # fmt: skip


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
    fake = FakePiSession(TURNS)
    outcome = await run_program(_request(project, recorder), PiHarness(session_factory=fake))
    assert outcome.status == "succeeded", (outcome.reason, outcome.verification)
    warnings = [e.message for e in recorder.events if isinstance(e, LogLine)]
    assert any("git was not found" in w and "wizard undo" in w for w in warnings)
    assert Journal(project).records() == []
