"""The sandbox made ahead for the agent's next command (`tools/sandbox_ahead.mjs`, in pi's host
and through wizard's own `bash`), with the real sandbox runtime and bubblewrap: a command
handed to it runs exactly as in a sandbox made for it, and a sandbox that no longer fits what
is on disk is never used.

Each test drives the module from a small Node script: a list of steps in, one JSON line out
per step. The project lives outside the system temp folder, which the sandbox closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.live.conftest import run_live, session_pid
from wizard.engines import bundle as engine
from wizard.processes import descendants, is_running
from wizard.runner.harness.driver import reap
from wizard.runner.harness.pi.session import PiSession
from wizard.testing.script import call, reply, text
from wizard.tools.sandbox import build_policy
from wizard.tools.shell import Ahead, SandboxedShell, SandboxWrapper, shell_tool

pytestmark = pytest.mark.live

MODULE = Path(__file__).parents[2] / "src" / "wizard" / "tools" / "sandbox_ahead.mjs"
SECRET = "AHEAD-SECRET-2718"

DRIVER = r"""
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
const [runtime, module, specFile, stepsFile] = process.argv.slice(2);
const spec = JSON.parse(readFileSync(specFile, "utf8"));
const steps = JSON.parse(readFileSync(stepsFile, "utf8"));
const { SandboxManager } = await import(pathToFileURL(runtime).href);
const ahead = await import(pathToFileURL(module).href);
// As pi's host: the seccomp helper through wizard's launcher (`spec.keeps` false: as where the
// runtime starts none, one sandbox per command).
const config = spec.keeps ? await ahead.keepingConfig(spec.config, spec.private, runtime)
  : spec.config;
await SandboxManager.initialize(config);
const cwd = process.cwd();
const env = { PATH: process.env.PATH, HOME: process.env.HOME, ...spec.env };
const shell = { shell: "/bin/bash", args: ["-c"] };
// `spec.around`: the sandbox's line run inside another ("{}" stands for it, quoted).
const quote = (text) => `'${text.replaceAll("'", "'\\''")}'`;
const sandbox = !spec.around ? SandboxManager : {
  wrapWithSandbox: async (command) =>
    spec.around.replace("{}", quote(await SandboxManager.wrapWithSandbox(command))),
  cleanupAfterCommand: () => SandboxManager.cleanupAfterCommand(),
};
const made = new ahead.SandboxAhead({
  sandbox, shell, prefix: spec.prefix, cwd,
  roots: ahead.watchedRoots(spec.config, cwd), env,
});
const say = (line) => process.stdout.write(JSON.stringify(line) + "\n");

function fresh(command, timeout) {  // what the host does without a prepared sandbox
  return SandboxManager.wrapWithSandbox(command).then((wrapped) => new Promise((resolve) => {
    const child = spawn("/bin/bash", ["-c", spec.prefix + wrapped],
                        { cwd, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    child.on("close", (code) => resolve({ exitCode: code, out }));
  }));
}

for (const step of steps) {
  if (step.op === "prepare") {
    made.prepare();
    await made.current.ready;
    say({ op: "prepare", pid: made.current.child?.pid ?? null, keeps: made.current.keeps });
    if (step.wait) await new Promise((resolve) => process.stdin.once("data", resolve));
  } else if (step.op === "first") {  // as pi's host once the model's first `bash` call streams
    const generation = made.generation;
    made.prepareFirst();
    await made.current?.ready;
    say({ op: "first", made: made.generation !== generation, pid: made.current?.child?.pid });
  } else if (step.op === "discard") {
    made.discard();
    say({ op: "discard" });
  } else if (step.op === "throw") {  // discard, and wait (10 s at most) until it is gone
    const child = made.current.child;
    const gone = await Promise.race([made.discard().then(() => true),
                                     new Promise((resolve) => setTimeout(resolve, 10_000, false))]);
    say({ op: "throw", gone, code: child.exitCode, signal: child.signalCode });
  } else if (step.op === "run") {
    const asked = { ...env, ...(step.env ?? {}) };
    const prepared = await made.take(step.dir ?? cwd, asked, step.command);
    let result;
    if (prepared) {
      let out = "";
      try {
        const { exitCode } = await prepared.run(step.command, cwd, {
          onData: (d) => (out += d), timeout: step.timeout ?? 0,
        });
        result = { exitCode, out };
      } catch (err) {
        result = { error: err.message, out };
      }
    } else {
      result = await fresh(step.command).catch((err) => ({ error: err.code ?? err.message }));
    }
    if (!prepared) SandboxManager.cleanupAfterCommand();  // else the sandbox's own, when it goes
    say({ op: "run", prepared: Boolean(prepared), ...result });
  }
}
made.discard();
await SandboxManager.reset();
await new Promise((resolve) => process.stdout.write("", resolve));  // all said, then exit
process.exit(0);  // stdin, open for the waits, would keep Node up
"""


@pytest.fixture
def project() -> Iterator[Path]:
    """A project with a secret `.env`, outside the system temp folder."""
    where = os.environ.get("WIZARD_HOSTILE_ROOT", "/var/tmp")
    base = Path(tempfile.mkdtemp(prefix="wizard-ahead-", dir=where))
    root = base / "project"
    (root / "config").mkdir(parents=True)
    (root / ".env").write_text(f"KEY={SECRET}\n")
    (root / "app.js").write_text("console.log(1)\n")
    (base / "tmp").mkdir()
    yield root
    shutil.rmtree(base, ignore_errors=True)


def drive(
    project: Path,
    steps: list[dict[str, Any]],
    outside: Callable[[], None] | None = None,
    around: str = "",
    keeps: bool = True,
) -> list[dict[str, Any]]:
    """Run `steps` in the driver; after a `prepare` step that says `wait`, `outside()` makes its
    change (from outside, while the sandbox is ready) before the driver goes on. `around`
    runs each sandbox made ahead inside another line ("{}" is the sandbox's); `keeps` false
    runs the runtime without wizard's launcher (one sandbox per command, as off Linux)."""
    bundle = engine.installed_bundle()
    if bundle is None:
        pytest.skip("pi is not installed (wizard engines install pi)")
    policy = build_policy(project, project.parent / "tmp").reading(bundle.prefix)
    folder = project.parent
    (folder / "private").mkdir(exist_ok=True)  # closed to commands, as pi's agent folder
    policy = policy.denying(folder / "private")
    spec = {**policy.host_spec(), "around": around, "keeps": keeps,
            "private": str(folder / "private")}  # fmt: skip
    (folder / "spec.json").write_text(json.dumps(spec))
    (folder / "steps.json").write_text(json.dumps(steps))
    (folder / "driver.mjs").write_text(DRIVER)
    process = subprocess.Popen(
        [str(bundle.node), str(folder / "driver.mjs"), str(bundle.sandbox_entry), str(MODULE),
         str(folder / "spec.json"), str(folder / "steps.json")],
        cwd=project, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert process.stdout is not None and process.stdin is not None
    lines = []
    for raw in process.stdout:
        line = json.loads(raw)
        lines.append(line)
        if line["op"] == "prepare" and outside is not None:
            outside()
            process.stdin.write("go\n")
            process.stdin.flush()
    assert process.wait(60) == 0
    return lines


def test_a_prepared_sandbox_runs_the_command_as_a_fresh_one_would(project: Path) -> None:
    lines = drive(project, [
        {"op": "prepare"},
        {"op": "run", "command": "cat .env; echo exit-next; exit 7"},
        {"op": "prepare"},
        {"op": "run", "command": "echo hi > made.txt && pwd"},
    ])  # fmt: skip
    first, second = lines[1], lines[3]
    assert first["prepared"] and first["exitCode"] == 7
    assert SECRET not in first["out"] and "exit-next" in first["out"]
    assert second["prepared"] and second["exitCode"] == 0
    assert second["out"] == f"{project}\n"
    assert (project / "made.txt").read_text() == "hi\n"


def test_a_kept_sandbox_runs_command_after_command_each_as_a_fresh_one_would(
    project: Path,
) -> None:
    """Nothing changes on disk, so one sandbox runs every command (wizard's launcher hands
    each to the runtime's seccomp helper): each gets its own exit code and all of its output,
    errors included, however large and however it ends; whatever a command leaves running
    is gone before the next, and the `.env` stays hidden."""
    token_like = "0123456789abcdef" * 2 + "0"
    lines = drive(project, [
        {"op": "prepare"},
        {"op": "run", "command": "setsid sleep 2719 & (while :; do echo spam; sleep 0.01; done) &"
                                 " echo first; echo oops >&2; exit 5"},
        {"op": "prepare"},
        {"op": "run", "command": "sleep 0.2; cat .env; pgrep -f 'slee[p] 2719' || echo none"},
        {"op": "prepare"},
        {"op": "run", "command": f"head -c 300000 /dev/zero | tr '\\0' a; echo {token_like}"},
        {"op": "prepare"},
        {"op": "run", "command": "printf 'no newline at the end'"},
    ])  # fmt: skip
    prepares = [line for line in lines if line["op"] == "prepare"]
    runs = [line for line in lines if line["op"] == "run"]
    assert all(line["keeps"] for line in prepares)
    assert len({line["pid"] for line in prepares}) == 1  # one sandbox for them all
    assert all(run["prepared"] for run in runs)
    assert runs[0]["exitCode"] == 5 and "first\n" in runs[0]["out"] and "oops" in runs[0]["out"]
    assert runs[1]["exitCode"] == 0 and runs[1]["out"].endswith("none\n")
    assert "spam" not in runs[1]["out"] and SECRET not in runs[1]["out"]
    assert runs[2]["out"] == "a" * 300000 + token_like + "\n"
    assert runs[3] == {"op": "run", "prepared": True, "exitCode": 0, "out": "no newline at the end"}
    assert subprocess.run(["pgrep", "-f", "slee[p] 2719"], capture_output=True).returncode == 1


def test_a_kept_sandbox_goes_once_a_command_made_a_name(project: Path) -> None:
    """A command that makes a name (here a `.env` below) has changed what the sandbox was made
    from: the next command gets a new one, which hides the new file."""
    lines = drive(project, [
        {"op": "prepare"},
        {"op": "run", "command": f"mkdir -p deep && echo KEY={SECRET} > deep/.env.local"},
        {"op": "prepare"},
        {"op": "run", "command": "cat deep/.env.local; echo done"},
    ])  # fmt: skip
    assert lines[0]["pid"] != lines[2]["pid"]
    assert lines[3]["prepared"] and "done" in lines[3]["out"]
    assert SECRET not in lines[3]["out"]


def test_without_the_launcher_a_sandbox_runs_one_command(project: Path) -> None:
    """Where the runtime starts no seccomp helper (off Linux), the stub runs one command and
    the sandbox ends with it: the next command gets another."""
    lines = drive(project, [
        {"op": "prepare"},
        {"op": "run", "command": "echo one; exit 3"},
        {"op": "prepare"},
        {"op": "run", "command": "echo two"},
    ], keeps=False)  # fmt: skip
    assert [lines[0]["keeps"], lines[2]["keeps"]] == [False, False]
    assert lines[0]["pid"] != lines[2]["pid"]
    assert lines[1] == {"op": "run", "prepared": True, "exitCode": 3, "out": "one\n"}
    assert lines[3] == {"op": "run", "prepared": True, "exitCode": 0, "out": "two\n"}


def test_a_name_made_or_replaced_outside_after_the_sandbox_was_made_throws_it_away(
    project: Path,
) -> None:
    """Another process of the user's writes a new `.env` below, and replaces the masked one
    (an editor's save: a new file renamed over it), while a sandbox is ready: the command
    gets a fresh sandbox, which hides both."""

    def outside() -> None:
        if not (project / "config" / ".env.local").exists():
            (project / "config" / ".env.local").write_text(f"NESTED={SECRET}\n")
        else:
            (project / ".env.new").write_text(f"KEY={SECRET}-2\n")
            os.rename(project / ".env.new", project / ".env")

    lines = drive(project, [
        {"op": "prepare", "wait": True},
        {"op": "run", "command": "cat config/.env.local; echo done"},
        {"op": "prepare", "wait": True},
        {"op": "run", "command": "cat .env; echo done"},
    ], outside)  # fmt: skip
    for run in (lines[1], lines[3]):
        assert not run["prepared"], run
        assert SECRET not in run["out"] and "done" in run["out"]


def test_a_sandbox_prepared_for_another_folder_or_environment_is_not_used(project: Path) -> None:
    lines = drive(project, [
        {"op": "prepare"},
        {"op": "run", "command": "echo $EXTRA", "env": {"EXTRA": "x"}},
        {"op": "prepare"},
        {"op": "run", "command": "pwd", "dir": str(project / "config")},
        {"op": "prepare"},
        {"op": "run", "command": "echo a\u0000b"},
    ])  # fmt: skip
    assert [line["prepared"] for line in lines if line["op"] == "run"] == [False, False, False]


def test_no_process_outlives_its_command_or_a_sandbox_never_taken(project: Path) -> None:
    started = time.monotonic()
    lines = drive(project, [
        {"op": "prepare"},
        {"op": "run", "command": "setsid sleep 3141 & disown; echo started"},
        {"op": "prepare"},
        {"op": "run", "command": "sleep 30", "timeout": 1},
        {"op": "prepare"},
        {"op": "discard"},
    ])  # fmt: skip
    assert lines[1]["prepared"] and "started" in lines[1]["out"]
    assert lines[3]["prepared"] and lines[3]["error"] == "timeout:1"
    assert time.monotonic() - started < 20
    unused = lines[4]["pid"]
    deadline = time.monotonic() + 5
    while is_running(unused) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not is_running(unused)
    found = subprocess.run(["pgrep", "-f", "sleep (3141|30)$"], capture_output=True, text=True)
    assert found.stdout.strip() == ""


def test_a_sandbox_thrown_away_ends_by_itself_not_by_a_kill(project: Path) -> None:
    """Thrown away, a sandbox made ahead is told to end (its socket closes, and its stub exits
    125), never killed: a kill that lands while bubblewrap is setting up can leave its init
    running outside the group for good, with the runtime's network relays."""
    lines = drive(project, [{"op": "prepare"}, {"op": "throw"}])
    assert lines[1] == {"op": "throw", "gone": True, "code": 125, "signal": None}


def test_a_sandbox_thrown_away_that_runs_outside_its_group_is_gone_all_the_same(
    project: Path,
) -> None:
    """What that kill leaves, made on purpose: the sandbox in a session of its own, out of
    the reach of a kill of the group, holding the output pipes. Killing the group only, the
    host waited for those pipes for ever: pi's next file tool never started, and the run
    ended 150 s later as an engine that hung (a full CI run)."""
    steps = [{"op": "prepare"}, {"op": "throw"}]
    try:
        lines = drive(project, steps, around="setsid -f bash -c {}';true'")
        assert lines[1]["gone"] is True, lines
    finally:
        subprocess.run(["pkill", "-KILL", "-f", str(project)], check=False)
    left = subprocess.run(["pgrep", "-f", str(project)], capture_output=True, text=True)
    assert left.stdout.strip() == ""


def test_a_sandbox_thrown_away_that_ignores_its_socket_is_killed(project: Path) -> None:
    lines = drive(project, [{"op": "prepare"}, {"op": "throw"}],
                  around="printf R >&3; exec 3>&-; exec sleep 2718 # {}")  # fmt: skip
    assert lines[1] == {"op": "throw", "gone": True, "code": None, "signal": "SIGKILL"}
    assert subprocess.run(["pgrep", "-f", "sleep 2718"], capture_output=True).returncode == 1


RACY = r"""
import { mkdirSync, writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
const [module, folder] = process.argv.slice(2);
const { noteFolders, folderStamp } = await import(pathToFileURL(module).href);
writeFileSync(`${folder}/a`, "");
const noted = await noteFolders({ shallow: [], deep: [folder] });
const [, listing] = noted.folders.get(folder);
// A name made within the same clock tick as the noting: the folder's stamp may be the same.
writeFileSync(`${folder}/.env`, "");
const before = await noted.unchangedNow();
noted.folders.set(folder, [folderStamp(folder), listing]);
const sameStamp = await noted.unchangedNow();
noted.close();
console.log(JSON.stringify({ racy: listing !== null, before, sameStamp }));
"""


def test_a_folder_changed_in_the_tick_it_was_noted_in_is_compared_by_its_listing(
    project: Path,
) -> None:
    bundle = engine.installed_bundle()
    if bundle is None:
        pytest.skip("pi is not installed (wizard engines install pi)")
    script = project.parent / "racy.mjs"
    script.write_text(RACY)
    folder = project / "config"
    done = subprocess.run([str(bundle.node), str(script), str(MODULE), str(folder)],
                          capture_output=True, text=True, check=True)  # fmt: skip
    assert json.loads(done.stdout) == {"racy": True, "before": False, "sameStamp": False}


WATCHED = r"""
import { mkdirSync, renameSync, writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
const [module, base, change] = process.argv.slice(2);
const { noteFolders } = await import(pathToFileURL(module).href);
const many = Array.from({ length: 80 }, (_, i) => `tree/many/${i}`);
for (const folder of ["tree/a", "tree/b/deep", "named/inner", ...many]) {
  mkdirSync(`${base}/${folder}`, { recursive: true });
}
writeFileSync(`${base}/tree/a/one`, "");
writeFileSync(`${base}/tree/a/two`, "");
// Noted well after the tree was made (not racily clean): only the stamps tell a change.
await new Promise((resolve) => setTimeout(resolve, 200));
const noted = await noteFolders({ shallow: [`${base}/named/inner`], deep: [`${base}/tree`] });
// Watched a few at a time once noted: the last folder changed before its watch is set.
if (change === "between") writeFileSync(`${[...noted.folders.keys()].at(-1)}/.env`, "");
await noted.watching;
const still = await noted.unchangedNow();
const turn = (i) => (i % 2 ? "one" : "two");
const changes = {
  between: () => {},
  // A name made below the walk's root, the check asked in the same tick.
  deep: () => writeFileSync(`${base}/tree/b/deep/.env`, ""),
  // The folders above a named one renamed, and another put at its path: no event on it.
  above: () => {
    renameSync(`${base}/named`, `${base}/moved`);
    mkdirSync(`${base}/named/inner`, { recursive: true });
  },
  // A flood of events in one folder (two files written in turn: no two alike, which the
  // kernel would merge) that overflows the kernel's queue before the loop reads any, then a
  // name made in another: its event is lost.
  flood: () => {
    for (let i = 0; i < 20_000; i++) writeFileSync(`${base}/tree/a/${turn(i)}`, `${i}`);
    writeFileSync(`${base}/tree/b/.env`, "");
  },
  // Files written in place, in a folder below the root: nothing the sandbox was made from.
  contents: () => {
    for (let i = 0; i < 100; i++) writeFileSync(`${base}/tree/a/${turn(i)}`, `${i}`);
  },
};
changes[change]();
const after = await noted.unchangedNow();
noted.close();
console.log(JSON.stringify({ watched: noted.watched, still, after }));
"""


@pytest.mark.parametrize(
    ("change", "unchanged"),
    [("deep", False), ("above", False), ("flood", False), ("contents", True), ("between", False)],
)
def test_the_folders_a_sandbox_was_made_from_are_watched_and_every_change_is_seen(
    project: Path, change: str, unchanged: bool
) -> None:
    """The check before a command compares only the folders an event named and those where
    the walk entered the tree; it sees a name made below in the tick before it, a folder
    above a named one replaced (no event on the named one), a name whose event the kernel
    dropped after a flood, and a name made in a folder before its watch was set; files
    written in place are no change."""
    bundle = engine.installed_bundle()
    if bundle is None:
        pytest.skip("pi is not installed (wizard engines install pi)")
    script = project.parent / "watched.mjs"
    script.write_text(WATCHED)
    base = project.parent / "watched"
    done = subprocess.run([str(bundle.node), str(script), str(MODULE), str(base), change],
                          capture_output=True, text=True, check=True)  # fmt: skip
    before = change != "between"  # caught when all are watched, by comparing all once more
    assert json.loads(done.stdout) == {"watched": before, "still": before, "after": unchanged}


async def test_a_host_killed_while_a_sandbox_stands_ready_leaves_no_placeholder(
    tmp_path: Path,
) -> None:
    """The next command's sandbox stands while the model thinks, with the runtime's empty
    placeholders in the project. A host killed then cannot remove them: its session does.
    (What the killed host started, its sandbox runtime's bridge and a sandbox caught half made,
    can outlive it: `wizard` adopts and ends such orphans as a subreaper, which this test
    process is not; the test ends them as `wizard` would.)"""
    project = tmp_path / "project"
    project.mkdir()
    (project / "app.js").write_text("console.log(1)\n")
    seen: list[bool] = []

    def kill_while_ready(session: PiSession) -> None:
        async def kill() -> None:
            deadline = time.monotonic() + 10
            while not (project / ".npmrc").exists() and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            seen.append((project / ".npmrc").exists())
            host = session_pid(session)
            below.extend(descendants(host))
            os.kill(host, signal.SIGKILL)

        tasks.add(asyncio.get_running_loop().create_task(kill()))

    tasks: set[asyncio.Task[None]] = set()
    below: list[int] = []
    thinking = {"responses": [reply(call("bash", command="true")),
                              reply(text("Thinking."), latency_ms=20_000)]}  # fmt: skip
    try:
        run = await run_live(project, thinking, on_start=kill_while_ready)
    finally:
        for pid in below:  # as `wizard`, a subreaper, ends its orphans at exit
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    assert seen == [True], "the sandbox made ahead never stood in the project"
    assert not run.result.ok
    assert sorted(p.name for p in project.iterdir()) == ["app.js"]


def test_a_folder_a_command_renamed_keeps_its_env_hidden_from_the_next(project: Path) -> None:
    """A command tries to move the folder that holds a masked `.env` elsewhere in the project
    (the sandbox refuses: the mask is a mount); the next command's sandbox, made after it
    ended, hides the file wherever it is."""
    (project / "config" / ".env.local").write_text(f"NESTED={SECRET}\n")
    lines = drive(project, [
        {"op": "prepare"},
        {"op": "run", "command": "mkdir -p vault && mv config vault/ && echo moved"},
        {"op": "prepare"},
        {"op": "run", "command": "cat vault/config/.env.local config/.env.local; echo done"},
    ])  # fmt: skip
    assert SECRET not in lines[1]["out"]
    assert lines[3]["prepared"] and "done" in lines[3]["out"]
    assert SECRET not in lines[3]["out"]


def test_the_first_sandbox_made_ahead_serves_the_first_command_and_none_after_another_tool(
    project: Path,
) -> None:
    """pi's host makes the first command's sandbox ahead (`prepareFirst`): the first command
    runs in it and the second in the same one; once a command was taken, asking again makes
    none, nor once another tool threw the sandbox away (that tool must find none standing)."""
    before = sorted(p.name for p in project.iterdir())
    lines = drive(project, [
        {"op": "first"},
        {"op": "run", "command": "cat .env; echo first"},
        {"op": "first"},
        {"op": "prepare"},
        {"op": "run", "command": "echo second"},
    ])  # fmt: skip
    first, ran, again, kept, second = lines
    assert first["made"] and first["pid"] is not None
    assert ran["prepared"] and "first" in ran["out"] and SECRET not in ran["out"]
    assert not again["made"]  # a command was taken: its end prepares the next
    assert kept["pid"] == first["pid"] and second["prepared"] and "second" in second["out"]
    another_tool = drive(project, [{"op": "first"}, {"op": "discard"}, {"op": "first"}])
    assert another_tool[0]["made"] and another_tool[2] == {"op": "first", "made": False}
    assert sorted(p.name for p in project.iterdir()) == before


async def test_the_anthropic_shell_hands_each_command_to_the_sandbox_made_ahead(
    project: Path,
) -> None:
    """wizard's own `bash` (the anthropic harness's) makes the next command's sandbox ahead
    too, once a command has ended: the next runs in it (no wrap when it comes), one after a
    change made from outside gets a fresh sandbox that hides what changed, and no placeholder
    stays."""
    shell = _own_shell(project)
    async with shell.wrapping(project) as started:
        wrapper = started.wrapper
        assert wrapper is not None
        wrapped_anew = _counting_wraps(wrapper)
        bash = shell_tool(project, started)
        first = await bash.handler({"command": "cat .env; echo done"})
        second = await bash.handler({"command": "echo made > made.txt && cat made.txt"})
        assert len(wrapped_anew) == 1  # the first command's, made when it came
        assert SECRET not in first.text and "done" in first.text
        assert not second.is_error and "made" in second.text
        assert wrapper._next is not None
        await wrapper._next  # the next one stands ready; then another process writes
        (project / "config" / ".env.local").write_text(f"NESTED={SECRET}\n")
        third = await bash.handler({"command": "cat config/.env.local; echo done"})
        assert len(wrapped_anew) == 2
        assert SECRET not in third.text and "done" in third.text
        stopped = await bash.handler({"command": "sleep 30", "timeout": 1})
        assert stopped.is_error and "timed out" in stopped.text
    assert sorted(p.name for p in project.iterdir()) == [".env", "app.js", "config", "made.txt"]


async def test_the_anthropic_shell_s_first_sandbox_made_ahead_serves_the_first_command(
    project: Path,
) -> None:
    """Made ahead of the first command (`make_ahead`, as the session does once the model's
    first `bash` call streams), the first command runs in it and the second in the
    same one; asked for again once another tool has thrown it away, none is made (that tool
    must find no sandbox standing) until that tool's call has ended, and none stays."""
    shell = _own_shell(project)
    before = sorted(p.name for p in project.iterdir())
    async with shell.wrapping(project) as started:
        wrapper = started.wrapper
        assert wrapper is not None
        wrapped_anew = _counting_wraps(wrapper)
        started.make_ahead(project)
        assert wrapper._next is not None
        ahead = await wrapper._next
        bash = shell_tool(project, started)
        first = await bash.handler({"command": "cat .env; echo first"})
        assert SECRET not in first.text and "first" in first.text and not first.is_error
        assert wrapper._next is not None and await wrapper._next is ahead  # kept
        second = await bash.handler({"command": "echo second"})
        assert "second" in second.text and wrapped_anew == []
        await wrapper.before_call("write")
        started.make_ahead(project)
        assert wrapper._next is None
        assert sorted(p.name for p in project.iterdir()) == before
        # Once that tool's call has ended, the next command's is made (`after_tool`).
        started.make_ahead(project, after_tool=True)
        assert wrapper._next is not None
        third = await bash.handler({"command": "cat .env; echo third"})
        assert "third" in third.text and SECRET not in third.text and wrapped_anew == []
    assert sorted(p.name for p in project.iterdir()) == before


async def test_the_anthropic_shell_keeps_its_sandbox_while_nothing_it_was_made_from_changed(
    project: Path,
) -> None:
    """wizard's own `bash` keeps the sandbox made ahead for command after command until one
    makes a name; that one ends by itself (its socket closed) and the next is made. What a
    command left running is gone when it ends, while the sandbox stays."""
    shell = _own_shell(project)
    async with shell.wrapping(project) as started:
        wrapper = started.wrapper
        assert wrapper is not None
        bash = shell_tool(project, started)

        async def run(command: str) -> tuple[str, Ahead]:
            done = await bash.handler({"command": command})
            assert wrapper._next is not None
            return done.text, await wrapper._next

        _, ahead = await run("true")
        assert ahead.keeps
        text, kept = await run("setsid sleep 2720 & echo bg; exit 4")
        assert kept is ahead and ahead.process.returncode is None and "exit code 4" in text
        assert subprocess.run(["pgrep", "-f", "slee[p] 2720"], capture_output=True).returncode == 1
        text, kept = await run("cat .env; echo second")
        assert kept is ahead and SECRET not in text and "second" in text
        _, made = await run("touch made.txt")
        assert made is not ahead and ahead.process.returncode == 125
    assert sorted(p.name for p in project.iterdir()) == [".env", "app.js", "config", "made.txt"]


async def test_the_anthropic_shell_s_sandbox_thrown_away_while_made_leaves_no_placeholder(
    project: Path,
) -> None:
    """The gate throws the next command's sandbox away before a file tool, also while the
    runtime is still making it (a model that answers at once, a loaded machine). That waits
    for the making: a making cancelled mid-wrap left the runtime counting a sandbox nobody
    would clean up, so it kept every later sandbox's placeholders, and the next file tool met
    them (`test_hostile_outside[anthropic]`, under CI load)."""
    shell = _own_shell(project)
    before = sorted(p.name for p in project.iterdir())
    async with shell.wrapping(project) as started:
        wrapper = started.wrapper
        assert wrapper is not None
        bash = shell_tool(project, started)
        for delay in (0, 0.01, 0.03, 0.05, None):  # None: once it stands ready
            assert not (await bash.handler({"command": "true"})).is_error
            making = wrapper._next
            assert making is not None and not making.done()
            if delay is None:
                await making
            else:
                await asyncio.sleep(delay)
            await wrapper.discard()
            assert making.done()
            assert sorted(p.name for p in project.iterdir()) == before, delay
        done = await bash.handler({"command": "cat .env; echo done"})
        assert SECRET not in done.text and "done" in done.text
    assert sorted(p.name for p in project.iterdir()) == before


async def test_the_anthropic_shell_s_sandbox_thrown_away_ends_by_itself(project: Path) -> None:
    """As pi's host: told to end (its socket closed), not killed; one that does not end
    within the grace is killed."""
    shell = _own_shell(project)
    async with shell.wrapping(project) as started:
        wrapper = started.wrapper
        assert wrapper is not None
        assert not (await shell_tool(project, started).handler({"command": "true"})).is_error
        assert wrapper._next is not None
        ahead = await wrapper._next
        await wrapper.discard()
        assert ahead.process.returncode == 125
        ours, theirs = socket.socketpair()
        stuck = await asyncio.create_subprocess_exec(
            "sleep", "2718", pass_fds=(theirs.fileno(),), start_new_session=True
        )
        theirs.close()
        await wrapper._drop(Ahead(stuck, ours, project, {}))
        assert stuck.returncode == -signal.SIGKILL


def _counting_wraps(wrapper: SandboxWrapper) -> list[str]:
    """The commands `wrapper` wraps when they come (not handed to a sandbox made ahead), from
    now on."""
    wrapped: list[str] = []
    wrap = wrapper.wrapped

    async def counted(command: str, folder: Path) -> str:
        wrapped.append(command)
        return await wrap(command, folder)

    wrapper.wrapped = counted  # type: ignore[method-assign]
    return wrapped


async def test_the_anthropic_shell_s_runtime_leaves_its_node_s_end_to_the_reaping_list(
    project: Path,
) -> None:
    """Closed with a reaping list (a session's, which the harness waits for after the
    closing snapshot), the runtime stops its relays and says it has left; what is left of its
    Node goes to the list instead of being waited for, and is gone once the list is reaped,
    its relays with it, no placeholder left."""
    shell = _own_shell(project)
    before = sorted(p.name for p in project.iterdir())
    reaping: list[asyncio.Future[Any]] = []
    async with shell.wrapping(project, reaping) as started:
        wrapper = started.wrapper
        assert wrapper is not None
        said = await shell_tool(project, started).handler({"command": "echo ran"})
        assert "ran" in said.text
        runtime = wrapper.process
        helpers = descendants(runtime.pid)
    assert len(reaping) == 1  # it said it had left: its end is the list's to wait for
    await reap(reaping)
    assert reaping == [] and runtime.returncode is not None
    assert [pid for pid in helpers if is_running(pid)] == []
    assert sorted(p.name for p in project.iterdir()) == before


def _own_shell(project: Path) -> SandboxedShell:
    """wizard's own shell on `project`'s policy (not yet wrapping)."""
    installed = engine.installed_bundle()
    assert installed is not None
    (project.parent / "private").mkdir()
    return SandboxedShell.build(build_policy(project, project.parent / "tmp"), installed,
                                project.parent / "private")  # fmt: skip
