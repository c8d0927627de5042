"""`wizard resume` after an orchestrator run that a signal interrupted, as a user would: the
finished task is carried over and not run again, the interrupted one starts over, and a
resume is refused while the project differs from how the run left it."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.faults.test_signals import STREAMING, Run
from tests.integrations import email_sent
from tests.scenarios.conftest import wizard_env
from wizard.testing.cli import run_wizard
from wizard.testing.script import call

pytestmark = pytest.mark.live


PLAN = [
    call("enqueue_task", type="check", label="Check", id="check"),
    call("enqueue_task", type="client", label="Client", id="client", depends_on=["check"]),
]
CHECKED = call("complete_task", status="done", summary="checked", handoff="python, mailer.py")
WROTE = call("write", path="posthog_email.py", content="def send(to):\n    ...\n")
REPORTED = call("complete_task", status="done", summary="client written")


def _client_running(run: Run) -> bool:
    logs = list(run.logs.glob("*.jsonl"))
    return bool(logs) and any(
        '"id": "client"' in line and '"status": "running"' in line
        for line in logs[0].read_text().splitlines()
    )


def _resume(tmp_path: Path, run: Run, url: str, outcome: Path) -> subprocess.CompletedProcess[str]:
    return run_wizard(
        "resume",
        "--project",
        str(run.project),
        "--ci",
        "--outcome-json",
        str(outcome),
        timeout=240,
        env=wizard_env(tmp_path, WIZARD_GATEWAY_URL=url, TMPDIR=str(run.temp)),
    )


def test_an_interrupted_orchestrator_run_resumes_without_redoing_finished_tasks(
    tmp_path: Path, gateway_process: Any
) -> None:
    url, _ = gateway_process(
        {
            "conversations": [
                {"match": "# Plan the setup", "responses": [{"blocks": PLAN}, {"blocks": []}]},
                {"match": "# Task check:", "responses": [{"blocks": [CHECKED]}]},
                {"match": "# Task client:", "responses": [STREAMING]},
            ]
        }
    )
    run = Run(tmp_path, url, "--sequence", "orchestrator")
    run.wait_until(lambda: _client_running(run), "the client task running")
    run.process.send_signal(signal.SIGTERM)
    code, first = run.finish()
    assert (code, first["status"]) == (143, "cancelled")
    assert {t["id"]: t["status"] for t in first["tasks"]} == {"check": "done", "client": "stopped"}
    # What it ran on and used, and the command that carries it on (they used to be missing).
    assert (first["harness"], first["sequence"]) == ("pi", "orchestrator")
    assert first["usage"] is not None and first["usage"]["model_requests"] >= 2
    assert f"wizard resume {first['run_id']} --project" in first["outro"]["body"]
    assert "Steps: 1 done, 1 stopped." in first["outro"]["body"]

    wrote = {"blocks": [WROTE, *email_sent()]}
    later_url, later_log = gateway_process(
        {
            "conversations": [
                {"match": "# Task client:", "responses": [wrote, {"blocks": [REPORTED]}]}
            ]
        }
    )
    (run.project / "app.py").write_text("edited by the user\n")
    refused = _resume(tmp_path, run, later_url, tmp_path / "refused.json")
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "project changed since it ended" in refused.stderr and "app.py" in refused.stderr
    (run.project / "app.py").unlink()  # as the run left it

    resumed = _resume(tmp_path, run, later_url, tmp_path / "resumed.json")
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    outcome = json.loads((tmp_path / "resumed.json").read_text())
    assert outcome["resumed_from"] == first["run_id"]
    assert [(t["id"], t["status"], t["carried_over"]) for t in outcome["tasks"]] == [
        ("check", "done", True),
        ("client", "done", False),
    ]
    # The second gateway saw only the client task (twice: its write, its report), which got
    # the carried-over task's handoff; no plan, no check.
    asked = [json.loads(line) for line in later_log.read_text().splitlines()]
    assert [a["last_user_text"].split(":")[0] for a in asked] == ["# Task client"] * 2
    assert "- check (done): python, mailer.py" in asked[0]["last_user_text"]
    assert not any(a.get("unexpected") for a in asked)
    assert (run.project / "posthog_email.py").is_file()
