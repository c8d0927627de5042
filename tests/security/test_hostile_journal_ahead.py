"""The closing snapshot walks the project, its dependency folders listed, ahead, while the
model thinks after the last tool call (`runner.journaling`), on both engines, in a world
outside the system temp folder, through `wizard run` and `wizard undo` as a user runs them:

- a payload a hostile agent's last command appends to a dependency and to an app file, their
  mtimes put back, and then an `[ABORT]` at once, is still in the run's record;
- a process that command leaves behind to append the payload once the walk was taken (while
  the model thinks) is gone with its command: both files stay as they were, and the record,
  taken ahead, is true."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.integrations import email_app
from tests.scenarios.conftest import gateway_process
from tests.security.conftest import World, aborted_run
from wizard.testing.cli import run_wizard
from wizard.testing.script import call, reply, said

pytestmark = pytest.mark.live

__all__ = ["gateway_process"]

LEFTPAD = "node_modules/leftpad/index.js"
APP = "index.js"
APPEND = """import os
for target in ({target!r}, {app!r}):
    info = os.stat(target)
    with open(target, "a") as handle:
        handle.write("require('fs').writeFileSync(" + repr({marker!r}) + ", 'node');\\n")
    os.utime(target, ns=(info.st_atime_ns, info.st_mtime_ns))
print("appended")
"""
WALKED_AHEAD = "the closing snapshot takes the project's walk"
# Left behind by a command, every way a shell can: it appends once the listing was taken.
LATER = """import os, subprocess, sys
payload = "echo \\"require('fs').writeFileSync('{marker}', 'node')\\""
later = f"sleep 1.5; {{payload}} >> {target}; {{payload}} >> {app}"
subprocess.Popen(["setsid", "nohup", "sh", "-c", later], start_new_session=True,
                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execvp("sh", ["sh", "-c", later])
    os._exit(0)
open("left-behind.txt", "w").write("the command ran")
"""


def _app(root: Path) -> Path:
    project = root / "app"
    (project / "node_modules" / "leftpad").mkdir(parents=True)
    (project / LEFTPAD).write_text("module.exports = (s) => s;\n")
    (project / APP).write_text("console.log(require('leftpad')('ok'));\n")
    (project / "package.json").write_text(json.dumps({"name": "app"}))
    return email_app(project)


def _run_script(engine: str, project: Path, script: str, abort: dict[str, Any], tmp_path: Path,
                gateway_process: Any, **environ: str
                ) -> tuple[Any, Path, dict[str, str]]:  # fmt: skip
    """`wizard run` on `engine`: the agent writes `script`, runs it, then answers `abort`;
    the run, its outcome file, and the environment it ran in."""
    tool = "{}" if engine == "pi" else "mcp__wizard__{}"
    scenario = {
        "responses": [
            reply(call(tool.format("write"), path="script.py", content=script)),
            reply(call(tool.format("bash"), command="python3 script.py")),
            abort,
        ]
    }
    return aborted_run(engine, project, scenario, tmp_path, gateway_process, **environ)


def test_a_payload_from_the_last_command_before_an_abort_is_in_the_record(
    engine: str, tmp_path: Path, outside_world: World, gateway_process: Any
) -> None:
    project = _app(outside_world.outside.parent)
    marker = outside_world.outside / "ran"
    script = APPEND.format(target=LEFTPAD, app=APP, marker=str(marker))
    abort = said("[ABORT] the project is not one this program sets up")
    run, out, env = _run_script(engine, project, script, abort, tmp_path, gateway_process)
    assert "writeFileSync" in (project / LEFTPAD).read_text()
    assert "writeFileSync" in (project / APP).read_text()
    outcome = json.loads(out.read_text())
    assert outcome["dependency_changes"] == {LEFTPAD: "changed"}
    assert APP in outcome["changed_files"]
    assert WALKED_AHEAD in run.stdout  # made while the model answered, not at the close
    undo = run_wizard("undo", outcome["run_id"], "--project", str(project), env=env)
    assert undo.returncode == 0, undo.stdout + undo.stderr
    assert not (project / LEFTPAD).exists()
    assert "writeFileSync" not in (project / APP).read_text()
    # What the user does next runs nothing the agent planted.
    if shutil.which("node"):
        subprocess.run(["node", "index.js"], cwd=project, capture_output=True, check=False)
    assert not marker.exists()


def test_a_process_left_by_the_last_command_cannot_change_a_dependency_unseen(
    engine: str, tmp_path: Path, outside_world: World, gateway_process: Any
) -> None:
    project = _app(outside_world.outside.parent)
    before, app = (project / LEFTPAD).read_text(), (project / APP).read_text()
    marker = outside_world.outside / "ran"
    script = LATER.format(marker=marker, target=LEFTPAD, app=APP)
    # The model thinks past the walk (300 ms after the call) and the payload's time (1.5 s),
    # then stops.
    abort = said("[ABORT] the project is not one this program sets up", latency_ms=3000)
    run, out, _ = _run_script(engine, project, script, abort, tmp_path, gateway_process)
    assert (project / "left-behind.txt").exists()  # the command ran
    assert WALKED_AHEAD in run.stdout
    time.sleep(2)  # a process that outlived its command would have written by now
    assert (project / LEFTPAD).read_text() == before and (project / APP).read_text() == app
    outcome = json.loads(out.read_text())
    assert outcome["dependency_changes"] == {} and APP not in outcome["changed_files"]
    if shutil.which("node"):
        subprocess.run(["node", "index.js"], cwd=project, capture_output=True, check=False)
    assert not marker.exists()


# What wizard, its engines and the sandbox runtime run by name, outside the sandbox.
OWN_PROGRAMS = ("find", "git", "node", "bwrap", "socat", "rg")


def test_programs_a_dependency_put_on_the_user_s_path_never_run_outside_the_sandbox(
    engine: str, tmp_path: Path, outside_world: World, gateway_process: Any
) -> None:
    """A package may ship a `git` or a `bwrap` of its own in `node_modules/.bin` (an agent's
    command can write one there), and a user's PATH may hold that folder (direnv, npm's
    scripts; an activated `.venv/bin` likewise): wizard's journal, its engine and the
    sandbox runtime run the system's programs, never those, at the first snapshot, for each
    command, and at the close."""
    project = _app(outside_world.outside.parent)
    planted = project / "node_modules" / ".bin"
    planted.mkdir()
    marker = outside_world.outside / "planted-ran"
    for name in OWN_PROGRAMS:
        real = shutil.which(name)
        assert real is not None, name
        # Each says it ran (which only a process outside the sandbox can), then does its job.
        (planted / name).write_text(f'#!/bin/sh\necho {name} >> {marker}\nexec {real} "$@"\n')
        (planted / name).chmod(0o755)
    script = 'open("touched.txt", "w").write("the command ran")'
    abort = said("[ABORT] the project is not one this program sets up")
    path = f"{planted}:{os.environ['PATH']}"
    _, out, env = _run_script(engine, project, script, abort, tmp_path, gateway_process,
                              PATH=path)  # fmt: skip
    assert (project / "touched.txt").exists()  # the command ran: the close listed again
    assert not marker.exists(), marker.read_text()
    outcome = json.loads(out.read_text())
    assert outcome["dependency_changes"] == {}  # listed whole, before and after
    undo = run_wizard("undo", outcome["run_id"], "--project", str(project), env=env)
    assert undo.returncode == 0, undo.stdout + undo.stderr
    assert not marker.exists() and (project / LEFTPAD).exists()
