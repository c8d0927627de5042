"""The next command's sandbox, made while the model thinks, attacked through `wizard run` on
both engines in a world outside the system temp folder, then what the user does next.

A command links to the project's `.env` and to a sibling checkout's; the next one, in the
sandbox made ahead of it (after the links were made), reads through them; a file tool in
between throws the next sandbox away; then, again in a sandbox made ahead, a command tries to
move the `.env` out from under its mask, copy it through the link, and plant an `.npmrc`
whose shell the user's `npm test` would run. Nothing secret is read, the `.env` stays, and
`wizard diff`, `wizard undo`, `git status`, `git commit` and `npm test` afterwards run nothing
the agent planted."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
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

# The fence reads a command's text (it closes `.env` to bash and refuses expansions), so each
# step is a script the agent wrote first: only the sandbox stands in its way.
LINK = """import os
os.makedirs("deep/a", exist_ok=True)
os.symlink("../../.e" + "nv", "deep/a/e")
os.symlink("../sibling/.e" + "nv", "sib")
"""
READ = """out = []
for path in ("deep/a/e", "sib", ".e" + "nv"):
    try:
        out.append(open(path).read())
    except OSError as exc:
        out.append(f"{path}: {exc}")
open("seen-1.txt", "w").write("\\n".join(out))
"""
PLANT = """import os, shutil
out = []
for step in (lambda: os.rename(".e" + "nv", "moved.txt"),
             lambda: shutil.copyfile("deep/a/e", "copied.txt"),
             lambda: out.append(open("copied.txt").read()),
             lambda: open(".npmrc", "w").write("script-shell=" + os.path.abspath("evil.sh"))):
    try:
        step()
    except OSError as exc:
        out.append(str(exc))
open("evil.sh", "w").write("#!/bin/sh\\ntouch {marker}\\n")
os.chmod("evil.sh", 0o755)
open("seen-2.txt", "w").write("\\n".join(out))
"""


def _left_nothing_and_undone(
    tmp_path: Path, w: World, out: Path, env: dict[str, str], status_before: str
) -> None:
    """No process outlived the run, and the user's `wizard undo` takes all of it back."""
    (log,) = (tmp_path / "logs").glob("*.jsonl")
    assert "left by the run" not in log.read_text()
    run_id = json.loads(out.read_text())["run_id"]
    undo = run_wizard("undo", run_id, "--project", str(w.project), env=env)
    assert undo.returncode == 0, undo.stdout + undo.stderr
    assert user_git(w.project, w.home, "status", "--porcelain").stdout == status_before


def _commit_and_test_run_nothing_planted(w: World, marker: Path) -> None:
    """The user's `git commit` and `npm test` afterwards succeed, and run nothing the agent
    planted (which would make `marker`)."""
    user_git(w.project, w.home, "add", "app.py", "package.json")
    commit = user_git(w.project, w.home, "commit", "-q", "-m", "app")
    assert commit.returncode == 0, commit.stderr
    if shutil.which("npm"):
        test = subprocess.run(["npm", "test"], cwd=w.project, capture_output=True, text=True,
                              env={**os.environ, "HOME": str(w.home)}, check=False)  # fmt: skip
        assert test.returncode == 0, test.stdout + test.stderr
    assert not marker.exists()


def test_a_sandbox_made_ahead_hides_what_the_command_before_linked_to(
    engine: str, tmp_path: Path, outside_world: World, gateway_process: Any
) -> None:
    w = outside_world
    project = w.project
    marker = w.outside / "ran"
    (project / "package.json").write_text(json.dumps({"name": "app", "scripts": {"test": "true"}}))
    env_before = (project / ".env").read_text()
    status_before = user_git(project, w.home, "status", "--porcelain").stdout
    tool = "{}" if engine == "pi" else "mcp__wizard__{}"
    bash, write = tool.format("bash"), tool.format("write")
    scripts = {"link.py": LINK, "read.py": READ,
               "plant.py": PLANT.replace("{marker}", str(marker))}  # fmt: skip
    scenario = {
        "responses": [
            *(reply(call(write, path=name, content=text)) for name, text in scripts.items()),
            reply(call(bash, command="python3 link.py")),
            reply(call(bash, command="python3 read.py")),  # in the sandbox made after the links
            reply(call(write, path="notes.txt", content="notes\n")),  # throws the next away
            reply(call(bash, command="true")),
            reply(call(bash, command="python3 plant.py")),  # in a sandbox made ahead again
            said("[ABORT] the project is not one this program sets up"),
        ]
    }
    _, out, env = aborted_run(engine, project, scenario, tmp_path, gateway_process)
    secrets = (w.canaries["env"], w.canaries["sibling"])
    seen = (project / "seen-1.txt").read_text() + (project / "seen-2.txt").read_text()
    assert (project / "notes.txt").exists() and (project / "evil.sh").exists()  # all of it ran
    assert not any(secret in seen for secret in secrets)
    assert not (project / "moved.txt").exists()
    assert (project / ".env").read_text() == env_before
    assert not (project / ".npmrc").exists()  # refused: never a placeholder left either

    # What the user does next.
    run_id = json.loads(out.read_text())["run_id"]
    diff = run_wizard("diff", run_id, "--project", str(project), env=env)
    assert diff.returncode == 0, diff.stderr
    assert "notes.txt" in diff.stdout and not any(secret in diff.stdout for secret in secrets)
    undo = run_wizard("undo", run_id, "--project", str(project), env=env)
    assert undo.returncode == 0, undo.stdout + undo.stderr
    assert user_git(project, w.home, "status", "--porcelain").stdout == status_before
    assert (project / ".env").read_text() == env_before
    _commit_and_test_run_nothing_planted(w, marker)


def test_a_model_that_answers_at_once_throws_every_sandbox_away_while_it_is_made(
    engine: str, tmp_path: Path, outside_world: World, gateway_process: Any
) -> None:
    """Each command is followed at once by a file tool, which throws away the next command's
    sandbox while the runtime is still making it (the model answers in no time). A sandbox
    killed mid-making could leave bubblewrap's init and the runtime's relays running outside
    its group, holding pi's pipes: the file tool never started, and the run ended 150 s
    later as a hung engine. Every one is gone before the file tool runs; the run ends as the
    agent ends it, soon, with every file written, no placeholder standing and no process
    left; the user's undo takes it all back."""
    w = outside_world
    project = w.project
    status_before = user_git(project, w.home, "status", "--porcelain").stdout
    absent = [name for name in PLACEHOLDERS if not os.path.lexists(project / name)]
    tool = "{}" if engine == "pi" else "mcp__wizard__{}"
    steps = []
    for number in range(10):
        steps.append(reply(call(tool.format("bash"), command=f"touch c{number}.txt")))
        steps.append(reply(call(tool.format("write"), path=f"w{number}.txt", content="w\n")))
    scenario = {"responses": [*steps, said("[ABORT] the agent stops here")]}
    started = time.monotonic()
    _, out, env = aborted_run(engine, project, scenario, tmp_path, gateway_process)
    assert time.monotonic() - started < 100  # the engine watchdog's 150 s never came
    made = {p.name for p in project.iterdir()}
    assert {f"{k}{n}.txt" for k in "cw" for n in range(10)} <= made
    assert not [name for name in absent if os.path.lexists(project / name)]
    _left_nothing_and_undone(tmp_path, w, out, env, status_before)


# What the two scripts below look for in the sandbox's `/proc`.
FIND = """import os
def processes():
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            yield int(pid), open(f"/proc/{pid}/cmdline", "rb").read().split(b"\\0")
        except OSError:
            pass
def launchers():  # bash -p LAUNCHER SHELL -c STUB; each with its start time: which one
    return [(pid, open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[19])
            for pid, argv in processes()
            if argv[2:3] and argv[2].endswith(b"/seccomp/launcher")]
"""
# Run in the sandbox kept for the agent's commands: reach the launcher that hands them over
# (outside the filter), speak on its socket, and leave a process to write after the command.
ATTACK = (
    FIND
    + """import subprocess
out = []
def step(name, act):
    try:
        out.append(f"{name}: LEAKED {act()!r:.60}")
    except OSError as exc:
        out.append(f"{name}: blocked {type(exc).__name__}")
for pid, _ in launchers():
    step("mem", lambda: open(f"/proc/{pid}/mem", "rb"))
    step("environ", lambda: open(f"/proc/{pid}/environ", "rb").read())
    step("socket", lambda: open(f"/proc/{pid}/fd/3", "wb"))
    step("stdin", lambda: open(f"/proc/{pid}/fd/0", "rb"))
    step("root", lambda: os.listdir(f"/proc/{pid}/root"))
step("control", lambda: os.write(3, b"/\\0touch planted\\0x\\0"))
subprocess.Popen(["python3", "-c", "import time; time.sleep(1.5); "
                  "open('report-2.txt', 'a').write('LINGER')"], start_new_session=True)
open("report-1.txt", "w").write("\\n".join([f"launcher={launchers()}", *out]))
"""
)
CHECK = (
    FIND
    + """lingering = [pid for pid, argv in processes() if b"LINGER" in b" ".join(argv)]
open("report-2.txt", "a").write(f"launcher={launchers()}\\nlingering={lingering}\\n")
"""
)


def test_a_command_in_the_kept_sandbox_cannot_reach_the_next(
    engine: str, tmp_path: Path, outside_world: World, gateway_process: Any
) -> None:
    """The sandbox is kept for the next command when nothing it was made from has changed,
    and a launcher of wizard's hands it each command from outside the seccomp filter. A
    command looks for that launcher in `/proc` and tries its memory, environment, files and
    root, writes to the socket the commands come on, and leaves a process behind to write
    after it. Nothing of the launcher can be opened, the socket is not the command's, the
    process is gone with its command, and the next command runs in the same sandbox (the
    same launcher) with nothing planted."""
    w = outside_world
    project = w.project
    status_before = user_git(project, w.home, "status", "--porcelain").stdout
    tool = "{}" if engine == "pi" else "mcp__wizard__{}"
    bash, write = tool.format("bash"), tool.format("write")
    files = {"attack.py": ATTACK, "check.py": CHECK, "report-1.txt": "", "report-2.txt": ""}
    scenario = {
        "responses": [
            *(reply(call(write, path=name, content=text)) for name, text in files.items()),
            reply(call(bash, command="true")),  # the sandbox for the next is made after it
            reply(call(bash, command="python3 attack.py")),  # changes what files hold, no name
            reply(call(bash, command="python3 check.py"), latency_ms=2500),  # kept for this
            said("[ABORT] the agent stops here"),
        ]
    }
    _, out, env = aborted_run(engine, project, scenario, tmp_path, gateway_process)
    first = (project / "report-1.txt").read_text().splitlines()
    second = (project / "report-2.txt").read_text()
    assert first[0].startswith("launcher=[") and first[0] != "launcher=[]", first
    assert len(first) == 7 and all(": blocked " in line for line in first[1:]), first
    assert f"{first[0]}\nlingering=[]\n" == second  # the same launcher; nothing written
    assert not (project / "planted").exists()
    _left_nothing_and_undone(tmp_path, w, out, env, status_before)


# Run in the sandbox kept for the agent's commands: configs in its own home and temp folder
# (empty folders of the sandbox's, kept with it) that would run a script of the project's if
# the user's git or npm read them.
HOME_PLANT = """import os
evil = os.path.abspath("evil.sh")
home = os.path.expanduser("~")
out = []
for path, text in ((os.path.join(home, ".gitconfig"), f"[core]\\\\n\\\\tfsmonitor = {evil}\\\\n"),
                   (os.path.join(home, ".npmrc"), f"script-shell={evil}\\\\n"),
                   ("/tmp/planted", "x")):
    try:
        open(path, "w").write(text)
        out.append(f"wrote {path}")
    except OSError as exc:
        out.append(f"{path}: {exc}")
open("report-1.txt", "w").write("\\\\n".join(out))
"""


def test_what_a_command_leaves_in_the_kept_sandbox_s_own_folders_stays_in_it(
    engine: str, tmp_path: Path, outside_world: World, gateway_process: Any
) -> None:
    """A command writes a `.gitconfig` and an `.npmrc` into its home and a file into `/tmp`:
    inside the sandbox those are empty folders of its own, which the sandbox kept for the
    next command keeps too. None of it reaches the user's home or the system temp folder,
    and the user's `git status`, `git commit` and `npm test` afterwards run nothing the agent
    planted."""
    w = outside_world
    project = w.project
    marker = w.outside / "ran"
    (project / "package.json").write_text(json.dumps({"name": "app", "scripts": {"test": "true"}}))
    outside_before = w.state()
    status_before = user_git(project, w.home, "status", "--porcelain").stdout
    tool = "{}" if engine == "pi" else "mcp__wizard__{}"
    bash, write = tool.format("bash"), tool.format("write")
    files = {"plant.py": HOME_PLANT, "evil.sh": f"#!/bin/sh\ntouch {marker}\n", "report-1.txt": ""}
    scenario = {
        "responses": [
            *(reply(call(write, path=name, content=text)) for name, text in files.items()),
            reply(call(bash, command="chmod +x evil.sh")),
            reply(call(bash, command="true")),  # the sandbox for the next is made after it
            reply(call(bash, command="python3 plant.py")),
            reply(call(bash, command="git status --short > /dev/null; echo next")),
            said("[ABORT] the agent stops here"),
        ]
    }
    _, out, env = aborted_run(engine, project, scenario, tmp_path, gateway_process)
    assert "wrote" in (project / "report-1.txt").read_text()  # it ran, and wrote something
    assert w.state() == outside_before
    assert not Path(tempfile.gettempdir(), "planted").exists()
    _left_nothing_and_undone(tmp_path, w, out, env, status_before)
    _commit_and_test_run_nothing_planted(w, marker)
