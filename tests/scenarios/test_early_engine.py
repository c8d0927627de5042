"""pi's host starts with the `wizard` process, once its engine is checked, and so does the
listing of the project's dependency folders: a run takes both, and a command that never runs
leaves neither, nor the host's folders, behind."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.integrations import email_app
from tests.scenarios.conftest import ci_lines, wizard_env
from wizard.engines.bundle import check_unchanged
from wizard.engines.bundle import pi_prefix as installed_prefix
from wizard.journal import Journal
from wizard.testing.cli import run_wizard
from wizard.testing.script import said

pytestmark = pytest.mark.live


def test_a_run_adopts_the_host_started_with_the_process(
    tmp_path: Path, gateway_process: Any
) -> None:
    check_unchanged(installed_prefix())  # the engine's record, as `wizard engines install pi` makes
    url, _ = gateway_process({"responses": [said("[ABORT] no email sending code found\n")]})
    project = email_app(tmp_path / "project")
    (project / "app.py").write_text("print('hi')\n")
    done = run_wizard("run", "transactional-email", "--project", str(project), "--ci",
                      env=wizard_env(tmp_path, WIZARD_GATEWAY_URL=url))  # fmt: skip
    assert done.returncode == 3, done.stdout + done.stderr
    messages = [line.get("message", "") for line in ci_lines(done.stdout)]
    assert "pi started with wizard: its engine was checked then" in messages


def test_a_run_s_first_snapshot_takes_the_listings_made_with_the_process(
    tmp_path: Path, gateway_process: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, _ = gateway_process({"responses": [said("[ABORT] no email sending code found\n")]})
    project = tmp_path / "project"
    (project / "node_modules" / "left-pad").mkdir(parents=True)
    (project / "node_modules" / "left-pad" / "index.js").write_text("module.exports = 1;\n")
    (project / "app.js").write_text("require('left-pad');\n")
    email_app(project)
    state = tmp_path / "state"
    env = wizard_env(tmp_path, WIZARD_GATEWAY_URL=url, WIZARD_STATE_DIR=str(state))
    done = run_wizard("run", "transactional-email", "--project", str(project), "--ci", env=env)
    assert done.returncode == 3, done.stdout + done.stderr
    (log,) = (tmp_path / "logs").iterdir()
    assert "the 1 dependency folder listing(s) made while wizard loaded" in log.read_text()
    # What it recorded is what the journal lists itself (nothing changed since).
    monkeypatch.setenv("WIZARD_STATE_DIR", str(state))
    journal = Journal(project)
    (record,) = journal.records()
    listed = journal.store.heavy_listings()
    assert record.heavy_before == {"node_modules": listed["node_modules"][0]}
    assert _listers_of(project) == []


def _listers_of(project: Path) -> list[int]:
    """Processes listing `project`'s dependency folders (`wizard.listings`)."""
    found = []
    for process in psutil.process_iter(["cmdline"]):
        cmdline = process.info["cmdline"] or []
        if "wizard.listings" in cmdline and str(project.resolve()) in cmdline:
            found.append(process.pid)
    return found


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
    assert _listers_of(Path.cwd()) == []
    assert list(temp.iterdir()) == [], os.listdir(temp)
    assert json.dumps(args)  # (the parameter is the case)
