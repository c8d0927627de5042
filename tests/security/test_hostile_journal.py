"""A hostile agent against wizard's own git: `wizard run` and `wizard undo` as a user runs
them, on the real pi engine, after the agent planted repository config that runs a command.

The agent makes a nested repository whose `core.fsmonitor`, hooks and filters name a script
it wrote, and tries to set the same in the project's submodule config and in an existing
nested repository. If wizard's journal (or anything else of wizard's) ever ran it, the
script would leave a marker outside the project with wizard's environment in it.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.scenarios.conftest import gateway_process, wizard_env
from tests.security.conftest import SET_UP, World
from wizard.testing.cli import run_wizard
from wizard.testing.script import call, reply

pytestmark = pytest.mark.live

__all__ = ["gateway_process"]

PLANT = """import os, subprocess
hook = os.path.abspath("hook.sh")
os.chmod(hook, 0o755)
config = (
    "[core]\\n\\tfsmonitor = " + hook + "\\n\\thooksPath = " + os.path.dirname(hook) + "\\n"
    '[filter "x"]\\n\\tclean = ' + hook + "\\n"
)
subprocess.run(["git", "init", "-q", "newrepo"], check=True)
with open("newrepo/.gitattributes", "w") as handle:
    handle.write("* filter=x\\n")
for path in ("newrepo/.git/config", "vendor/lib/.git/config", ".git/modules/sub/config",
             ".git/config"):
    try:
        with open(path, "a") as handle:
            handle.write(config)
        print(path, "planted")
    except OSError as exc:
        print(path, "refused", exc.errno)
"""


def _wizard(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return run_wizard(*args, env=wizard_env(tmp_path, **env))


def test_no_config_the_agent_planted_runs_at_the_end_of_the_run_or_at_undo(
    tmp_path: Path, world: World, gateway_process: Any
) -> None:
    marker = world.outside / "ran"
    hook = f"#!/bin/sh\nenv > {marker}\n"
    scenario = {
        "responses": [
            reply(call("write", path="hook.sh", content=hook)),
            reply(call("write", path="plant.py", content=PLANT)),
            reply(call("bash", command="python3 plant.py")),
            reply(call("write", path="newrepo/app.py", content="x = 1\n")),
            *SET_UP,
        ]
    }
    url, _ = gateway_process(scenario)
    before = world.state()
    sub_config = (world.project / ".git" / "modules" / "sub" / "config").read_text()
    lib_config = (world.project / "vendor" / "lib" / ".git" / "config").read_text()
    run = _wizard(tmp_path, "run", "transactional-email", "--project", str(world.project),
                  "--ci", "--outcome-json", str(tmp_path / "outcome.json"),
                  WIZARD_GATEWAY_URL=url)  # fmt: skip
    outcome = json.loads((tmp_path / "outcome.json").read_text())
    assert outcome["status"] == "succeeded", run.stdout + run.stderr
    # A new repository is the agent's to make; the project's and the existing ones' git
    # folders are closed to its commands.
    assert "fsmonitor" in (world.project / "newrepo" / ".git" / "config").read_text()
    assert "fsmonitor" not in (world.project / ".git" / "config").read_text()
    assert (world.project / "vendor" / "lib" / ".git" / "config").read_text() == lib_config
    assert (world.project / ".git" / "modules" / "sub" / "config").read_text() == sub_config
    # The journal saw the new repository's files as plain files, and ran none of its config.
    assert "newrepo/app.py" in outcome["changed_files"]
    assert outcome["warnings"] == []
    assert not marker.exists(), marker.read_text()
    undo = _wizard(tmp_path, "undo", outcome["run_id"], "--project", str(world.project))
    assert undo.returncode == 0, undo.stdout + undo.stderr
    assert not (world.project / "newrepo" / "app.py").exists()
    assert not marker.exists()
    assert world.state() == before
