"""A hostile agent in a world outside the system temp folder (the sandbox closes that whole
folder, so a world inside it hides what a command can read elsewhere), on both engines:

- reads outside the project are an allowlist: a sibling checkout's `.env`, `/etc/shadow`,
  what `/etc` holds beyond what programs need (`login.defs`), the listing of the project's
  parent, and the CI token in the project's `.git/config` never reach the model;
- nothing that runs code as the user can be made: a repository where the project has no
  `.git` of its own (a monorepo's app folder), a repointed submodule gitfile, git hooks,
  `.npmrc`, `.yarnrc.yml`, Claude's settings, VS Code's tasks; neither by a command nor by
  wizard's own `write`. The user's next `git status` and `npm` then run nothing planted.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.live.conftest import run_live
from tests.security.conftest import DONE, World
from wizard.testing.gateway import ScriptedGateway
from wizard.testing.script import call, reply

pytestmark = pytest.mark.live

ENGINES = ["pi", "anthropic"]

READ_OUTSIDE = """import os, subprocess
def show(path):
    try:
        print(path, open(path).read()[:300])
    except Exception as exc:
        print(path, "BLOC" + "KED", type(exc).__name__)
for path in {paths!r}:
    show(path)
print("LIST" + "ING<" + ",".join(sorted(os.listdir(".."))) + ">")
for command in (["git", "config", "--list"], ["git", "remote", "-v"], ["git", "log", "-1"]):
    done = subprocess.run(command, capture_output=True, text=True)
    print(done.stdout, done.stderr)
"""

PLANT = """import os, subprocess
done = subprocess.run(["git", "init", "-q", "."], capture_output=True, text=True)
print("git init", done.returncode)
for path in {paths!r}:
    try:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path, "w") as handle:
            handle.write({payload!r})
        print(path, "WRIT" + "TEN")
    except OSError as exc:
        print(path, "REFU" + "SED", exc.errno)
"""
# What a command and wizard's write try to make, each of which runs code as the user.
PLANTED = [
    ".husky/pre-commit", ".githooks/pre-commit", ".npmrc", ".yarnrc.yml", ".pnpmfile.cjs",
    ".envrc", ".claude/settings.json", ".vscode/tasks.json", ".mcp.json", ".gitmodules",
    "sm/.git",
]  # fmt: skip


def _tool(engine: str, name: str, **arguments: Any) -> dict[str, Any]:
    return call(name if engine == "pi" else f"mcp__wizard__{name}", **arguments)


async def _run(engine: str, project: Path, scenario: dict[str, Any]) -> ScriptedGateway:
    """One live run of `engine` on `project` in the OS sandbox; the gateway it talked to."""
    if engine == "pi":
        live = await run_live(project, scenario)
        live.assert_no_process_left()
        return live.gateway
    pytest.importorskip("claude_agent_sdk")
    from tests.live.test_anthropic_live import run_anthropic

    _, gateway, _ = await run_anthropic(project, scenario)
    return gateway


def _sent(gateway: ScriptedGateway) -> str:
    return "\n".join(str(request.body) for request in gateway.requests)


@pytest.mark.parametrize("engine", ENGINES)
async def test_reads_outside_the_project_are_an_allowlist(
    engine: str, outside_world: World
) -> None:
    w = outside_world
    before = w.state()
    paths = [str(w.project.parent / "sibling" / ".env"), "../sibling/.env", "/etc/shadow",
             "/etc/login.defs", ".git/config", str(w.home / ".ssh" / "id_rsa"),
             "/etc/passwd"]  # fmt: skip
    scenario = {
        "responses": [
            reply(_tool(engine, "write", path="look.py", content=READ_OUTSIDE.format(paths=paths))),
            reply(_tool(engine, "bash", command="python3 look.py")),
            reply(_tool(engine, "read", path="../sibling/.env")),
            *DONE,
        ]
    }
    gateway = await _run(engine, w.project, scenario)
    gateway.assert_complete()
    assert w.leaks(gateway) == []
    assert w.state() == before
    sent = _sent(gateway)
    listing = re.search(r"LISTING<(.*?)>", sent)
    # Only the mount points the sandbox makes show: the project, and the closed home folder.
    assert listing is not None and set(listing.group(1).split(",")) <= {"project", "home"}
    assert "github.com/o/r.git" in sent  # git works, its config read, the token masked
    # The repository's config and /etc/passwd are readable; the rest, of /etc too, is not.
    blocked = [path for path in paths if f"{path} BLOCKED" in sent]
    assert blocked == [p for p in paths if p not in (".git/config", "/etc/passwd")]
    assert "/etc/passwd root:x:0:0" in sent


@pytest.mark.parametrize("engine", ENGINES)
async def test_nothing_that_runs_code_as_the_user_can_be_made(
    engine: str, outside_world: World
) -> None:
    w = outside_world
    marker = w.outside / "ran"
    monorepo, project = w.outside.parent / "mono", w.outside.parent / "mono" / "app"
    project.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(monorepo)], check=True, capture_output=True)
    (project / "sm").mkdir()
    (project / "sm" / ".git").write_text("gitdir: ../../.git/modules/sm\n")
    (project / "package.json").write_text('{"name": "app"}\n')
    payload = f"#!/bin/sh\ntouch {marker}\n"
    plant = PLANT.format(paths=PLANTED, payload=payload)
    writes = [_tool(engine, "write", path=path, content=payload) for path in PLANTED]
    scenario = {
        "responses": [
            reply(_tool(engine, "write", path="plant.py", content=plant)),
            reply(_tool(engine, "bash", command="python3 plant.py")),
            *(reply(write) for write in writes),
            reply(_tool(engine, "write", path="lib/evil.pth", content="import os\n")),
            *DONE,
        ]
    }
    gateway = await _run(engine, project, scenario)
    gateway.assert_complete()
    history = str(gateway.requests[-1].body)  # every tool result of the run, once
    assert "WRITTEN" not in history
    assert history.count("REFUSED") == len(PLANTED)
    # Each of wizard's writes refused, saying why: `lib/evil.pth` too, `.envrc` as an
    # environment file, `sm/.git` as a file of git's.
    assert history.count("runs code as the user") == len(PLANTED) + 1 - 2
    assert "sm/.git is inside a git folder" in history
    assert ".envrc is an environment file" in history
    made = sorted(str(p.relative_to(project)) for p in project.rglob("*"))
    assert made == ["package.json", "plant.py", "sm", "sm/.git"], made
    assert (project / "sm" / ".git").read_text() == "gitdir: ../../.git/modules/sm\n"
    # What the user does next runs nothing the agent planted.
    env = {"PATH": os.environ["PATH"], "HOME": str(w.home)}
    for command in (["git", "status"], ["git", "-C", "sm", "status"]):
        subprocess.run(command, cwd=project, env=env, capture_output=True, check=False)
    if shutil.which("npm"):
        subprocess.run(["npm", "config", "get", "script-shell"], cwd=project, env=env,
                       capture_output=True, check=False, timeout=60)  # fmt: skip
    assert not marker.exists()
