"""A run refuses an engine whose files changed after the install, naming the fix."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.integrations import email_app
from tests.scenarios.conftest import wizard_env
from wizard.engines.bundle import PI_PACKAGE, check_unchanged, pi_prefix
from wizard.testing.cli import run_wizard

pytestmark = pytest.mark.live


def test_a_run_refuses_a_changed_engine(
    tmp_path: Path, gateway_process: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    engines, state = tmp_path / "engines", tmp_path / "state"
    copy = engines / pi_prefix().name
    shutil.copytree(pi_prefix(), copy, symlinks=True)
    monkeypatch.setenv("WIZARD_STATE_DIR", str(state))
    check_unchanged(copy)  # recorded, as `wizard engines install pi` does
    lazy = copy / "node_modules" / "@silvia-odwyer" / "photon-node" / "package.json"
    lazy.chmod(0o644)
    lazy.write_text(lazy.read_text() + " ")  # a module pi's host loads on first image read
    url, _ = gateway_process({"responses": [{"blocks": [{"text": "never asked"}]}]})
    project = email_app(tmp_path / "project")
    outcome = tmp_path / "outcome.json"
    run = run_wizard(
        "run",
        "transactional-email",
        "--project",
        str(project),
        "--ci",
        "--outcome-json",
        str(outcome),
        timeout=120,
        env=wizard_env(
            tmp_path,
            WIZARD_GATEWAY_URL=url,
            WIZARD_ENGINES_DIR=str(engines),
            WIZARD_STATE_DIR=str(state),
        ),
    )
    assert run.returncode == 1, run.stdout + run.stderr
    result = json.loads(outcome.read_text())
    assert "photon-node/package.json" in result["reason"]
    assert "wizard engines install pi" in run.stdout
    assert list(project.iterdir()) == [project / "mailer.py"], "the run started on a changed engine"


def test_doctor_and_engines_status_name_a_changed_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """They said "ok" for an engine that `run` refuses: both now make the run's check, name
    the changed file and the fix, and fail."""
    engines, state = tmp_path / "engines", tmp_path / "state"
    copy = engines / pi_prefix().name
    shutil.copytree(pi_prefix(), copy, symlinks=True)
    monkeypatch.setenv("WIZARD_STATE_DIR", str(state))
    check_unchanged(copy)
    env = wizard_env(tmp_path, WIZARD_ENGINES_DIR=str(engines), WIZARD_STATE_DIR=str(state))
    for command in (["doctor"], ["engines", "status"]):
        sound = run_wizard(*command, timeout=60, env=env)
        assert "changed after wizard installed it" not in sound.stdout, sound.stdout
    cli = copy / "node_modules" / PI_PACKAGE / "dist" / "cli.js"
    cli.chmod(0o644)
    cli.write_text(cli.read_text() + "\n// planted\n")
    for command in (["doctor"], ["engines", "status"]):
        changed = run_wizard(*command, timeout=60, env=env)
        assert changed.returncode == 1, changed.stdout + changed.stderr
        assert "pi-coding-agent/dist/cli.js); wizard does not run a changed engine" in (
            changed.stdout.replace("\n", " ")
        )
        assert "wizard engines install pi" in changed.stdout
