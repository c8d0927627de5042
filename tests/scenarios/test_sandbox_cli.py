"""The sandbox through the `wizard` command: what a run without it, or without its tools, says."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.integrations import email_app, email_sent
from tests.scenarios.conftest import ci_lines, wizard_env
from wizard.testing.cli import run_wizard
from wizard.testing.script import call, reply

pytestmark = pytest.mark.live

DONE = {
    "responses": [
        {
            "blocks": [
                {"tool_call": {"name": "write", "arguments": {"path": "a.txt", "content": "x"}}},
                *email_sent(),
            ]
        },
        {"blocks": [{"text": "Done."}]},
        {"blocks": [{"text": "[WIZARD-REMARK] none"}]},
    ]
}


def _wizard(tmp_path: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    project = email_app(tmp_path / "project")
    return run_wizard(
        "run",
        "transactional-email",
        "--project",
        str(project),
        "--ci",
        "--outcome-json",
        str(tmp_path / "outcome.json"),
        *args,
        env=env,
        timeout=240,
    )


@pytest.mark.parametrize("how", ["flag", "env"])
def test_a_run_without_the_sandbox_warns_and_says_so_in_the_outcome(
    tmp_path: Path, gateway_process: Any, how: str
) -> None:
    url, _ = gateway_process(DONE)
    extra = {"WIZARD_SANDBOX": "off"} if how == "env" else {}
    args = ("--no-sandbox",) if how == "flag" else ()
    proc = _wizard(tmp_path, wizard_env(tmp_path, WIZARD_GATEWAY_URL=url, **extra), *args)
    assert proc.returncode == 0, proc.stderr[-2000:]
    outcome = json.loads((tmp_path / "outcome.json").read_text())
    assert outcome["sandbox"] == "off"
    assert "OS sandbox is OFF" in outcome["warnings"][0]
    logged = [line for line in ci_lines(proc.stdout) if line["event"] == "log"]
    assert any(line["level"] == "warning" and "OFF" in line["message"] for line in logged)


def test_a_sandboxed_run_says_so(tmp_path: Path, gateway_process: Any) -> None:
    url, _ = gateway_process(DONE)
    proc = _wizard(tmp_path, wizard_env(tmp_path, WIZARD_GATEWAY_URL=url))
    assert proc.returncode == 0, proc.stderr[-2000:]
    outcome = json.loads((tmp_path / "outcome.json").read_text())
    assert (outcome["sandbox"], outcome["warnings"]) == ("on", [])


def _path_without(tmp_path: Path, *names: str) -> str:
    """A PATH with everything on this one but `names`."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for folder in os.environ["PATH"].split(os.pathsep):
        for entry in Path(folder).glob("*") if Path(folder).is_dir() else []:
            target = bin_dir / entry.name
            if entry.name not in names and not target.exists():
                target.symlink_to(entry)
    return str(bin_dir)


def test_missing_sandbox_tools_stop_the_run_before_it_starts(tmp_path: Path) -> None:
    path = _path_without(tmp_path, "bwrap", "socat", "rg")
    env = wizard_env(tmp_path, WIZARD_GATEWAY_URL="http://127.0.0.1:9", PATH=path)
    proc = _wizard(tmp_path, env)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "needs bubblewrap, socat, ripgrep" in proc.stderr
    assert "apt-get install bubblewrap socat ripgrep" in proc.stderr
    outcome = json.loads((tmp_path / "outcome.json").read_text())
    assert outcome["status"] == "usage_error"


def test_the_demo_runs_without_the_sandbox_tools_and_says_so(tmp_path: Path) -> None:
    path = _path_without(tmp_path, "bwrap", "socat", "rg")
    env = wizard_env(tmp_path, PATH=path, TMPDIR=str(tmp_path))  # the demo keeps its project
    proc = run_wizard(
        "demo",
        "--ci",
        env=env,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "The OS sandbox is not available here" in proc.stderr
    assert ci_lines(proc.stdout)[-1]["sandbox"] == "off"


def test_a_sandbox_that_cannot_start_ends_the_run_before_any_tool_runs(
    tmp_path: Path, gateway_process: Any
) -> None:
    """pi's host starts the sandbox runtime as the first model request goes out, and every
    tool call waits for it: a runtime that cannot start (its network bridge's `socat` fails
    here) fails the run as an engine failure, and the model's first calls never run."""
    path = _path_without(tmp_path, "socat")
    socat = Path(path) / "socat"
    socat.write_text("#!/bin/sh\nexit 1\n")
    socat.chmod(0o755)
    first = reply(call("write", path="written.txt", content="x"), call("bash", command="touch ran"))
    url, _ = gateway_process({"responses": [first]})
    proc = _wizard(tmp_path, wizard_env(tmp_path, WIZARD_GATEWAY_URL=url, PATH=path))
    assert proc.returncode == 1, proc.stderr[-2000:]
    outcome = json.loads((tmp_path / "outcome.json").read_text())
    assert outcome["error_type"] == "WIZARD_ENGINE_FAILURE"
    assert "the OS sandbox did not start" in outcome["reason"]
    project = tmp_path / "project"
    assert not (project / "written.txt").exists() and not (project / "ran").exists()
