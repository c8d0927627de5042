"""A terminal that goes away mid-run (the window closed, a reader that stopped) ends neither
the run nor its answer: the run goes on to its end, the outcome file is written, and the exit
code is the outcome's. rich's own answer to a broken pipe was to exit the process at once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.integrations import email_app, email_sent
from tests.scenarios.conftest import wizard_env
from wizard.testing.script import reply, said

pytestmark = pytest.mark.live


@pytest.mark.parametrize("ci", [False, True], ids=["terminal", "ci"])
def test_the_run_and_its_outcome_outlive_the_terminal(
    tmp_path: Path, gateway_process: Any, ci: bool
) -> None:
    url, _ = gateway_process({"responses": [reply(*email_sent()), said("Done."), said("-")]})
    project = email_app(tmp_path / "project")
    outcome_file = tmp_path / "outcome.json"
    read, write = os.pipe()
    process = subprocess.Popen(
        [sys.executable, "-m", "wizard", "run", "transactional-email", "--project",
         str(project), "--outcome-json", str(outcome_file), *(["--ci"] if ci else [])],
        stdout=write, stderr=subprocess.PIPE, env=wizard_env(tmp_path, WIZARD_GATEWAY_URL=url),
    )  # fmt: skip
    os.close(write)
    assert os.read(read, 10)  # it started printing; then its reader goes away
    os.close(read)
    _, stderr = process.communicate(timeout=240)
    outcome = json.loads(outcome_file.read_text())
    assert (outcome["status"], process.returncode) == ("succeeded", 0), stderr.decode()[-2000:]
    assert outcome["verification"]["proofs"][0]["status"] == "proven"
    assert b"Traceback" not in stderr and b"BrokenPipe" not in stderr
