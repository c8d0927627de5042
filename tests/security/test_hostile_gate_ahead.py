"""File tools aimed at the names the next command's sandbox stands placeholders in, called
while it stands (right after a command), on both engines, in a world outside the system
temp folder; then what the user does next.

After each command the next one's sandbox is made at once, with empty placeholders in the
project for the names it closes (`.githooks`, `.envrc`, `.gitconfig`, `.vscode`, ...). The
agent then writes a git hook into `.githooks`, a `hooksPath` into `.gitconfig`, an `.envrc`
and a VS Code task that runs on opening the folder, and calls a tool nobody offered, before
a last command reports what it finds. Every write is refused, no placeholder is left behind
for a write to have gone through, and `wizard diff`, `wizard undo`, `git status`, `git
commit` and `npm test` afterwards run nothing the agent planted."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.scenarios.conftest import gateway_process
from tests.security.conftest import World, aborted_run, user_git
from wizard.testing.cli import run_wizard
from wizard.testing.script import call, reply, said
from wizard.tools.shell import PLACEHOLDERS

pytestmark = pytest.mark.live

__all__ = ["gateway_process"]

REPORT = """import os
names = (".githooks", ".envrc", ".gitconfig", ".vscode", ".husky")
out = [f"{name}: {os.path.lexists(name)}" for name in names]
open("report.txt", "w").write("\\n".join(out))
"""


def test_file_tools_aimed_at_the_next_sandbox_s_placeholders_write_nothing(
    engine: str, tmp_path: Path, outside_world: World, gateway_process: Any
) -> None:
    w = outside_world
    project = w.project
    marker = w.outside / "ran"
    (project / "package.json").write_text(json.dumps({"name": "app", "scripts": {"test": "true"}}))
    status_before = user_git(project, w.home, "status", "--porcelain").stdout
    absent = [name for name in PLACEHOLDERS if not os.path.lexists(project / name)]
    tool = "{}" if engine == "pi" else "mcp__wizard__{}"
    bash, write = tool.format("bash"), tool.format("write")
    hook = f"#!/bin/sh\ntouch {marker}\n"
    task = {"version": "2.0.0", "tasks": [{"label": "x", "type": "shell",
            "command": f"touch {marker}", "runOptions": {"runOn": "folderOpen"}}]}  # fmt: skip
    scenario = {
        "responses": [
            reply(call(write, path="report.py", content=REPORT)),
            reply(call(bash, command="true")),  # the next sandbox stands from here
            reply(call(write, path=".githooks/pre-commit", content=hook)),
            reply(call(bash, command="true")),
            reply(call(write, path=".gitconfig", content="[core]\n\thooksPath = .githooks\n")),
            reply(call(bash, command="true")),
            reply(call(write, path=".envrc", content=f"touch {marker}\n")),
            reply(call(bash, command="true")),
            reply(call(write, path=".vscode/tasks.json", content=json.dumps(task))),
            reply(call(tool.format("nope"), path="x")),  # a tool nobody offered
            reply(call(bash, command="python3 report.py")),
            said("[ABORT] the project is not one this program sets up"),
        ]
    }
    _, out, env = aborted_run(engine, project, scenario, tmp_path, gateway_process)
    report = (project / "report.txt").read_text()  # the last command ran
    # Inside that command's sandbox the closed names stand as placeholders; none was written.
    for name in (".githooks/pre-commit", ".envrc", ".gitconfig", ".vscode/tasks.json"):
        assert not (project / name).is_file() or (project / name).stat().st_size == 0, name
    assert not [name for name in absent if os.path.lexists(project / name)], report

    run_id = json.loads(out.read_text())["run_id"]
    diff = run_wizard("diff", run_id, "--project", str(project), env=env)
    assert diff.returncode == 0, diff.stderr
    changed = [line for line in diff.stdout.splitlines() if line.startswith("diff --git")]
    assert any("report.py" in line for line in changed), changed
    assert not any(name in line for line in changed
                   for name in (".githooks", ".envrc", ".gitconfig", ".vscode"))  # fmt: skip
    undo = run_wizard("undo", run_id, "--project", str(project), env=env)
    assert undo.returncode == 0, undo.stdout + undo.stderr
    assert user_git(project, w.home, "status", "--porcelain").stdout == status_before
    user_git(project, w.home, "add", "package.json")
    commit = user_git(project, w.home, "commit", "-q", "-m", "app")
    assert commit.returncode == 0, commit.stderr
    if shutil.which("npm"):
        test = subprocess.run(["npm", "test"], cwd=project, capture_output=True, text=True,
                              env={**os.environ, "HOME": str(w.home)}, check=False)  # fmt: skip
        assert test.returncode == 0, test.stdout + test.stderr
    assert not marker.exists()
