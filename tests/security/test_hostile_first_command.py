"""The agent's very first reply runs a command, at once: on pi the OS sandbox starts only as
the first model request goes out, and a reply that comes back before it has started must
still find every command inside it (`wizard run` on both engines, in a world outside the
system temp folder), then what the user does next."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.scenarios.conftest import gateway_process
from tests.security.conftest import World, aborted_run
from wizard.testing.cli import run_wizard
from wizard.testing.script import call, reply, said

pytestmark = pytest.mark.live

__all__ = ["gateway_process"]

# Written by the agent in the same first reply, then run at once: it reads everything it can
# outside the project, and writes outside it. (The paths are in the script: the fence reads a
# command's text, and only the sandbox stands in a script's way.)
GRAB = """import os
seen = []
for root in ({home!r}, {outside!r}):
    for folder, _, names in os.walk(root):
        for name in names:
            try:
                seen.append(open(os.path.join(folder, name)).read())
            except OSError as exc:
                seen.append(str(exc))
try:
    open({marker!r}, "w").write("planted")
except OSError as exc:
    seen.append(str(exc))
open("seen.txt", "w").write("\\n".join(seen))
"""


def test_a_command_in_the_first_reply_runs_in_the_sandbox(
    engine: str, tmp_path: Path, outside_world: World, gateway_process: Any
) -> None:
    w = outside_world
    project, marker = w.project, w.outside / "planted.txt"
    before = w.state()
    status = ["git", "status", "--porcelain"]
    git_env = {"PATH": os.environ["PATH"], "HOME": str(w.home), "GIT_CONFIG_NOSYSTEM": "1"}
    status_before = subprocess.run(status, cwd=project, env=git_env, capture_output=True).stdout
    tool = "{}" if engine == "pi" else "mcp__wizard__{}"
    grab = GRAB.format(home=str(w.home), outside=str(w.outside), marker=str(marker))
    scenario = {
        "responses": [
            reply(
                call(tool.format("write"), path="grab.py", content=grab),
                call(tool.format("bash"), command="python3 grab.py"),
            ),
            said("[ABORT] the project is not one this program sets up"),
        ]
    }
    _, out, env = aborted_run(engine, project, scenario, tmp_path, gateway_process)
    seen = (project / "seen.txt").read_text()  # it ran
    assert not [name for name, value in w.canaries.items() if value in seen]
    assert not marker.exists()
    assert w.state() == before

    # What the user does next.
    run_id = json.loads(out.read_text())["run_id"]
    diff = run_wizard("diff", run_id, "--project", str(project), env=env)
    assert diff.returncode == 0 and "grab.py" in diff.stdout, diff.stdout + diff.stderr
    undo = run_wizard("undo", run_id, "--project", str(project), env=env)
    assert undo.returncode == 0, undo.stdout + undo.stderr
    after = subprocess.run(status, cwd=project, env=git_env, capture_output=True).stdout
    assert after == status_before
    assert w.state() == before


def test_a_secret_written_in_the_first_reply_stays_hidden_from_its_first_command(
    engine: str, tmp_path: Path, outside_world: World, gateway_process: Any
) -> None:
    """The first command's sandbox is made as the model's first `bash` call streams: in a
    reply that first writes a secret into an env file with `set_env_values` (a name the
    sandbox must hide, made before the command runs), then reads it with a command, the
    sandbox made ahead goes with the first tool's call (on pi, whether or not the runtime
    had started by then), and the command runs in one made from what is there after it."""
    w = outside_world
    project = w.project
    secret = "CANARY-first-reply-env-4711"
    scripts = {"show": "(cat config/.env.local .env.local; echo shown) > seen.txt 2>&1"}
    (project / "config").mkdir(exist_ok=True)
    (project / "package.json").write_text(json.dumps({"name": "app", "scripts": scripts}))
    tool = "{}" if engine == "pi" else "mcp__wizard__{}"
    scenario = {
        "responses": [
            reply(
                *(
                    call(tool.format("set_env_values"), filePath=name, values={"LEAK": secret})
                    for name in ("config/.env.local", ".env.local")
                ),
                call(tool.format("bash"), command="npm run show"),
            ),
            said("[ABORT] the project is not one this program sets up"),
        ]
    }
    aborted_run(engine, project, scenario, tmp_path, gateway_process)
    seen = (project / "seen.txt").read_text()
    assert seen.endswith("shown\n") and secret not in seen, seen  # it ran, and saw neither
    assert (project / "config" / ".env.local").read_text() == f"LEAK={secret}\n"
