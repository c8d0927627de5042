"""pi's host starts with the `wizard` process, once its engine is checked: a run adopts it,
and a command that never runs leaves neither it nor its folders behind."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.scenarios.conftest import ci_lines, wizard_env
from wizard.engines.bundle import check_unchanged
from wizard.engines.bundle import pi_prefix as installed_prefix
from wizard.testing.cli import run_wizard
from wizard.testing.script import said

pytestmark = pytest.mark.live


def test_a_run_adopts_the_host_started_with_the_process(
    tmp_path: Path, gateway_process: Any
) -> None:
    check_unchanged(installed_prefix())  # the engine's record, as `wizard engines install pi` makes
    url, _ = gateway_process({"responses": [said("[ABORT] no email sending code found\n")]})
    project = tmp_path / "project"
    project.mkdir()
    (project / "app.py").write_text("print('hi')\n")
    done = run_wizard("run", "transactional-email", "--project", str(project), "--ci",
                      env=wizard_env(tmp_path, WIZARD_GATEWAY_URL=url))  # fmt: skip
    assert done.returncode == 3, done.stdout + done.stderr
    messages = [line.get("message", "") for line in ci_lines(done.stdout)]
    assert "pi started with wizard: its engine was checked then" in messages


def _hosts_in(folder: Path) -> list[int]:
    found = []
    for process in psutil.process_iter(["cmdline", "environ"]):
        try:
            if "host.mjs" in " ".join(process.info["cmdline"] or []) and str(folder) in (
                (process.info["environ"] or {}).get("TMPDIR", "")
            ):
                found.append(process.pid)
        except psutil.Error:
            continue
    return found


@pytest.mark.parametrize(
    "args",
    [
        ["run", "revenue-analytics", "--project", "/nonexistent"],  # refused after the start
        ["run", "transactional-email", "--project", "."],  # no gateway configured
        ["run", "revenue-analytics", "--help"],  # not a run at all
    ],
)
def test_a_command_that_never_runs_leaves_no_host_behind(tmp_path: Path, args: list[str]) -> None:
    temp = tmp_path / "temp"
    temp.mkdir()
    env = wizard_env(tmp_path, TMPDIR=str(temp))
    done = run_wizard(*args, env=env)
    assert done.returncode in (0, 2), done.stderr
    assert _hosts_in(temp) == []
    assert list(temp.iterdir()) == [], os.listdir(temp)
    assert json.dumps(args)  # (the parameter is the case)
