"""`wizard runs`, `wizard diff` and `wizard undo` after real runs of the pi engine."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.integrations import email_app, email_sent
from tests.journal.trees import state
from tests.scenarios.conftest import ci_lines, wizard_env
from wizard.testing.cli import run_wizard
from wizard.testing.script import call, reply

pytestmark = pytest.mark.live

SKILL = ".claude/skills/transactional-email/SKILL.md"


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "app.py").write_text("from mailer import send\nsend('hi')\n")
    (project / "src" / "mailer.py").write_text("def send(text):\n    print(text)\n")
    (project / "run.sh").write_text("#!/bin/sh\necho run\n")
    (project / "run.sh").chmod(0o750)
    return email_app(project)


def _wizard(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return run_wizard(*args, env=wizard_env(tmp_path, **env))


def test_a_real_run_is_journaled_and_undone_byte_for_byte(
    tmp_path: Path, gateway_process: Any
) -> None:
    edit = {"path": "src/mailer.py", "edits": [{"oldText": "print(text)", "newText": "api(text)"}]}
    scenario = {
        "responses": [
            reply(call("read", path=SKILL)),
            reply(call("write", path="src/posthog_email.py", content="def api(text):\n    ...\n")),
            reply(call("edit", **edit)),
            reply(call("write", path="notes/deep/report.md", content="# Report\n")),
            reply(*email_sent()),
            {"blocks": [{"text": "Done."}]},
            {"blocks": [{"text": "[WIZARD-REMARK] -"}]},
        ]
    }
    url, _ = gateway_process(scenario)
    project = _project(tmp_path)
    original = state(project)
    run = _wizard(tmp_path, "run", "transactional-email", "--project", str(project), "--ci",
                  WIZARD_GATEWAY_URL=url)  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    outcome = ci_lines(run.stdout)[-1]
    assert "src/posthog_email.py" in outcome["changed_files"]
    assert "api(text)" in (project / "src" / "mailer.py").read_text()

    listed = json.loads(_wizard(tmp_path, "runs", "--project", str(project), "--json").stdout)
    assert [(r["run_id"], r["status"]) for r in listed] == [(outcome["run_id"], "succeeded")]
    assert set(listed[0]["changed"]) >= {"src/mailer.py", "notes/deep/report.md", SKILL}

    shown = _wizard(tmp_path, "diff", "--project", str(project))
    assert "+    api(text)" in shown.stdout and "posthog_email.py" in shown.stdout

    undone = _wizard(tmp_path, "undo", "--project", str(project))
    assert undone.returncode == 0, undone.stderr
    assert "removed .claude/skills/transactional-email/SKILL.md" in undone.stdout
    assert state(project) == original
    assert not (project / ".claude").exists() and not (project / "notes").exists()


def test_undo_after_an_abort_removes_the_installed_skill(
    tmp_path: Path, gateway_process: Any
) -> None:
    scenario = {
        "responses": [
            reply(call("read", path=SKILL)),
            {"blocks": [{"text": "[ABORT] the api is not enabled for this project"}]},
        ]
    }
    url, _ = gateway_process(scenario)
    project = _project(tmp_path)
    original = state(project)
    run = _wizard(tmp_path, "run", "transactional-email", "--project", str(project),
                  WIZARD_GATEWAY_URL=url)  # fmt: skip
    assert run.returncode == 3, run.stderr[-3000:]
    assert "wizard undo" in run.stdout and "wizard diff" in run.stdout
    assert (project / SKILL).is_file()
    assert _wizard(tmp_path, "undo", "--project", str(project)).returncode == 0
    assert state(project) == original


def test_undo_refuses_after_a_user_edit(tmp_path: Path, gateway_process: Any) -> None:
    scenario = {
        "responses": [
            reply(call("write", path="app.py", content="from mailer import send\nsend('hello')\n")),
            reply(*email_sent()),
            {"blocks": [{"text": "Done."}]},
            {"blocks": [{"text": "[WIZARD-REMARK] -"}]},
        ]
    }
    url, _ = gateway_process(scenario)
    project = _project(tmp_path)
    run = _wizard(tmp_path, "run", "transactional-email", "--project", str(project), "--ci",
                  WIZARD_GATEWAY_URL=url)  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    (project / "app.py").write_text("# my own edit\n")
    refused = _wizard(tmp_path, "undo", "--project", str(project))
    assert refused.returncode == 1
    assert "app.py" in refused.stderr and "--force" in refused.stderr
    assert (project / "app.py").read_text() == "# my own edit\n"
    assert (project / SKILL).exists(), "a refused undo changes nothing"
