"""`wizard run` against a configured gateway (a standalone scripted gateway process)."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from tests.integrations import email_app, stripe_app
from tests.journal.trees import state
from tests.scenarios.conftest import ci_lines, pi_processes_in, wizard_env
from wizard.testing.cli import run_wizard
from wizard.testing.trees import tree_hash

pytestmark = pytest.mark.live

READ_SKILL = {
    "blocks": [
        {
            "tool_call": {
                "name": "read",
                "arguments": {"path": ".claude/skills/revenue-analytics/SKILL.md"},
            }
        }
    ]
}


def _project(tmp_path: Path) -> Path:
    """An app both programs these tests run fit: it sends email, and calls Stripe."""
    project = stripe_app(email_app(tmp_path / "project"))
    (project / "app.py").write_text("print('hello')\n")
    return project


def test_run_ends_on_the_matched_abort_case(tmp_path: Path, gateway_process: Any) -> None:
    url, log = gateway_process(
        {
            "responses": [
                READ_SKILL,
                {
                    "blocks": [
                        {
                            "text": "No Stripe calls anywhere.\n"
                            "[ABORT] could not find a stripe integration"
                        }
                    ]
                },
            ]
        }
    )
    project = _project(tmp_path)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "wizard",
            "run",
            "revenue-analytics",
            "--project",
            str(project),
            "--ci",
            "--model",
            "m-1",
        ],
        capture_output=True,
        text=True,
        env=wizard_env(tmp_path, WIZARD_GATEWAY_URL=url),
        timeout=240,
    )
    assert proc.returncode == 3, proc.stderr[-3000:]
    lines = ci_lines(proc.stdout)
    outcome = lines[-1]
    assert outcome["outro"]["message"] == "Could not find a Stripe integration"
    # Every line carries an ISO timestamp and the run id; tool calls are JSON objects.
    assert {line["run_id"] for line in lines} == {outcome["run_id"]}
    for line in lines:
        datetime.fromisoformat(line["ts"])
    (call,) = [line for line in lines if line["event"] == "tool_call"]
    assert call["name"] == "read"
    assert call["arguments"] == {"path": ".claude/skills/revenue-analytics/SKILL.md"}
    (run_log,) = (tmp_path / "logs").glob(f"*-{outcome['run_id']}.jsonl")
    logged = [json.loads(line) for line in run_log.read_text().splitlines()]
    assert [entry["event"] for entry in logged] == [line["event"] for line in lines[:-1]]
    assert outcome["outro"]["docs_url"] == "https://posthog.com/docs/revenue-analytics"
    requests = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r["model"] for r in requests] == ["m-1", "m-1"]
    assert (project / "app.py").read_text() == "print('hello')\n"
    assert pi_processes_in(project) == []


def test_openai_compatible_gateway(tmp_path: Path, gateway_process: Any) -> None:
    url, log = gateway_process(
        {
            "responses": [
                READ_SKILL,
                {"blocks": [{"text": "[ABORT] could not find a posthog distinct_id"}]},
            ]
        }
    )
    project = _project(tmp_path)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "wizard",
            "run",
            "revenue-analytics",
            "--project",
            str(project),
            "--ci",
            "--gateway-url",
            url,
            "--gateway-api",
            "openai-completions",
        ],
        capture_output=True,
        text=True,
        env=wizard_env(tmp_path),
        timeout=240,
    )
    assert proc.returncode == 3, proc.stderr[-3000:]
    assert ci_lines(proc.stdout)[-1]["outro"]["message"] == "Could not find a PostHog distinct_id"
    assert {json.loads(line)["endpoint"] for line in log.read_text().splitlines()} == {"openai"}


def test_ctrl_c_ends_the_run_cleanly(tmp_path: Path, gateway_process: Any) -> None:
    slow = {"blocks": [{"text": "thinking out loud " * 2000}], "chunk_chars": 8, "delay_ms": 50}
    url, log = gateway_process({"responses": [slow]})
    project = _project(tmp_path)
    original = state(project)
    outcome_file = tmp_path / "outcome.json"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "wizard",
            "run",
            "transactional-email",
            "--project",
            str(project),
            "--ci",
            "--outcome-json",
            str(outcome_file),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=wizard_env(tmp_path, WIZARD_GATEWAY_URL=url),
    )
    try:
        deadline = time.monotonic() + 120
        while not (log.exists() and log.read_text()) and not pi_processes_in(project):
            assert time.monotonic() < deadline, "the run never reached the gateway"
            time.sleep(0.1)
        # The skill, whose undo is checked below, is installed after the project's first
        # snapshot, which a new project's run takes once its engine has started.
        skill = project / ".claude/skills/transactional-email/SKILL.md"
        while not log.exists() or not _streaming(tmp_path) or not skill.exists():
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, stderr[-3000:]
    outcome = json.loads(outcome_file.read_text())
    assert outcome["status"] == "cancelled"
    assert ci_lines(stdout)[-1]["status"] == "cancelled"
    assert pi_processes_in(project) == []
    # The interrupted run was journaled too: undo takes back the skill it installed.
    assert ".claude/skills/transactional-email/SKILL.md" in outcome["changed_files"]
    undo = run_wizard(
        "undo",
        "--project",
        str(project),
        env=wizard_env(tmp_path),
        timeout=60,
    )
    assert undo.returncode == 0, undo.stderr
    assert state(project) == original


def _streaming(tmp_path: Path) -> bool:
    """Whether the wizard's log shows the run under way (the spinner started)."""
    logs = list((tmp_path / "logs").glob("*.jsonl"))
    return bool(logs) and "spinner_started" in logs[0].read_text()


def test_skill_command_without_abort_cases_shows_the_generic_screen(
    tmp_path: Path, gateway_process: Any
) -> None:
    skills = tmp_path / "skills" / "foo"
    skills.mkdir(parents=True)
    (skills / "SKILL.md").write_text(
        "---\nname: foo\ndescription: A skill.\n---\nIf there is nothing to do, write "
        "[ABORT] nothing to do\n"
    )
    read = {"tool_call": {"name": "read", "arguments": {"path": ".claude/skills/foo/SKILL.md"}}}
    scenario = {"responses": [{"blocks": [read]}, {"blocks": [{"text": "[ABORT] nothing to do"}]}]}
    url, _ = gateway_process(scenario)
    project = _project(tmp_path)
    proc = run_wizard(
        "skill",
        "foo",
        "--project",
        str(project),
        "--ci",
        "--skills-dir",
        str(tmp_path / "skills"),
        env=wizard_env(tmp_path, WIZARD_GATEWAY_URL=url),
        timeout=240,
    )
    assert proc.returncode == 3, proc.stderr[-3000:]
    outro = ci_lines(proc.stdout)[-1]["outro"]
    assert (outro["message"], outro["body"]) == ("foo aborted", "nothing to do")
    assert outro["docs_url"] == "https://posthog.com/docs"


def test_a_turn_budget_ends_the_run_as_budget_exceeded_and_keeps_undo(
    tmp_path: Path, gateway_process: Any
) -> None:
    project = email_app(tmp_path / "project")
    (project / "app.py").write_text("print('hi')\n")
    write = {"tool_call": {"name": "write", "arguments": {"path": "a.txt", "content": "x"}}}
    url, _ = gateway_process({"responses": [
        {"blocks": [write]}, {"blocks": [{"text": "never requested"}]},
    ]})  # fmt: skip
    outcome_file = tmp_path / "outcome.json"
    proc = run_wizard(
        "run", "transactional-email", "--project", str(project), "--ci", "--max-turns", "1",
        "--outcome-json", str(outcome_file), env=wizard_env(tmp_path, WIZARD_GATEWAY_URL=url),
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr[-2000:]
    outcome = json.loads(outcome_file.read_text())
    assert (outcome["status"], outcome["error_type"]) == ("failed", "WIZARD_BUDGET_EXCEEDED")
    assert outcome["outro"]["message"] == "The run reached its budget"
    assert "the turn budget (1) is spent" in outcome["reason"]
    assert outcome["usage"]["model_requests"] == 1
    assert "a.txt" in outcome["changed_files"]  # what it did before is journaled: undo works


def test_a_program_that_does_not_fit_the_app_says_so_and_changes_nothing(
    tmp_path: Path, gateway_process: Any
) -> None:
    """tldr's command-line client sends no email: `wizard run transactional-email` ends not
    applicable (exit 5) with the outcome written, asks the model nothing, and leaves the
    project byte for byte as it was; the screen says why and what would fit."""
    project = tmp_path / "tldr"
    shutil.copytree(Path(__file__).parents[1] / "corpus" / "tldr-python-client", project)
    untouched = tree_hash(project)
    url, log = gateway_process({"responses": [{"blocks": [{"text": "never asked"}]}]})
    outcome_file = tmp_path / "outcome.json"
    env = wizard_env(tmp_path, WIZARD_GATEWAY_URL=url)
    proc = run_wizard("run", "transactional-email", "--project", str(project),
                      "--outcome-json", str(outcome_file), env=env)  # fmt: skip
    assert proc.returncode == 5, proc.stdout + proc.stderr
    outcome = json.loads(outcome_file.read_text())
    assert (outcome["status"], outcome["changed_files"]) == ("not_applicable", [])
    assert outcome["reason"].startswith("no code here sends email")
    assert "Transactional email does not fit this project" in proc.stdout
    assert "No other program of wizard's fits it" in proc.stdout
    assert tree_hash(project) == untouched
    assert not log.exists() or log.read_text().strip() == ""
    assert pi_processes_in(project) == []
