"""Two runs on one project, as a new user starts them (two `wizard run` a second apart): the
second is refused before it touches anything, and so is `wizard undo` meanwhile."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest

from tests.faults.test_signals import STREAMING, Run
from tests.scenarios.conftest import wizard_env
from wizard.testing.cli import run_wizard

pytestmark = pytest.mark.live


def test_a_second_run_and_an_undo_are_refused_while_a_run_works(
    tmp_path: Path, gateway_process: Any
) -> None:
    url, _ = gateway_process({"responses": [STREAMING]})
    first = Run(tmp_path, url)
    first.pi()  # under way: pi streams the reply
    env = wizard_env(tmp_path, WIZARD_GATEWAY_URL=url, TMPDIR=str(first.temp))
    for command in (["run", "transactional-email"], ["undo"]):
        second = run_wizard(
            *command,
            "--project",
            str(first.project),
            env=env,
            timeout=60,
        )
        assert second.returncode == 2, second.stdout + second.stderr
        assert f"pid {first.process.pid}" in second.stderr
        assert "is working on" in second.stderr
    first.process.send_signal(signal.SIGTERM)
    code, outcome = first.finish()
    assert code == 143 and outcome["status"] == "cancelled"
