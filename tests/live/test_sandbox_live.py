"""The OS sandbox, executed for real: scripts the agent writes and runs through pi cannot read
a secret, write outside the project, reach a host, fork without bound, or outlive their
command. Each script reports `CASE-<name>: BLOCKED` or `CASE-<name>: LEAKED`; nothing secret
may reach any request the scripted gateway received, and the disk outside is unchanged.

The fence lets every one of these commands through (`python3 file.py`, `node file.js`,
`npm run NAME`): only the sandbox stands in their way.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.live.conftest import LiveRun, run_live
from wizard.engines import bundle as engine
from wizard.runner.proofs.sink import ProbeSink
from wizard.testing.script import call
from wizard.tools.sandbox import (
    MAX_PROCESSES,
    CommandCaps,
    SandboxPolicy,
    build_policy,
    process_cap,
    remove_cgroup,
)
from wizard.tools.shell import SandboxedShell, shell_tool

pytestmark = pytest.mark.live

ENV_SECRET = "ENV-SECRET-4711"
SSH_SECRET = "SSH-SECRET-0815"


@contextlib.contextmanager
def _caps(run_id: str, memory_mib: int | None = None) -> Iterator[CommandCaps]:
    """The caps of a run's commands (`process_cap`), their cgroups removed at the end; a skip
    where what the test needs cannot be capped here (the memory of processes together, when
    it asks for it; else their count)."""
    caps = process_cap(run_id, memory_mib)
    try:
        if memory_mib is not None and not caps.memory:
            pytest.skip("no memory cgroup may be made here; memory is held per process")
        if not caps.processes:
            pytest.skip("no way to cap processes here (root without a writable cgroup)")
        yield caps
    finally:
        for group in caps.groups:
            remove_cgroup(group)


def _report(name: str, body: str) -> str:
    """A Python script that runs `body`; an exception means the sandbox blocked it."""
    indented = "\n".join("    " + line for line in body.splitlines())
    return (
        "import os, subprocess, sys, time, urllib.request\n"
        "try:\n"
        f"{indented}\n"
        f"    print('CASE-{name}: LEAKED', result)\n"
        "except Exception as exc:\n"
        f"    print('CASE-{name}: BLOCKED', type(exc).__name__)\n"
    )


def scripts(port: int) -> dict[str, str]:
    return {
        "env.py": _report("env", "result = open('.' + 'env').read()"),
        "nested.py": _report("nested", "result = open('config/.env.' + 'local').read()"),
        "ssh.py": _report("ssh", "result = open(os.path.expanduser('~/.s' + 'sh/id_rsa')).read()"),
        "escape.py": _report(
            "escape", "open('out/pwned.txt', 'w').write('x')\nresult = 'wrote outside'"
        ),
        "net.py": _report(
            "net", f"result = urllib.request.urlopen('http://127.0.0.1:{port}/', timeout=5).read()"
        ),
        "bg.py": "import subprocess\nsubprocess.Popen(['sleep', '313'], start_new_session=True)\n"
        "print('CASE-bg: started')\n",
        "fork.py": f"import os, time\nkids = 0\ntry:\n    for _ in range(5 * {MAX_PROCESSES}):\n"
        "        if os.fork() == 0:\n            time.sleep(5)\n            os._exit(0)\n"
        "        kids += 1\nexcept OSError as exc:\n    print('CASE-fork: BLOCKED after', kids)\n"
        "else:\n    print('CASE-fork: LEAKED', kids)\n",
        "x.js": "try { console.log('CASE-node: LEAKED', require('fs').readFileSync('.e' + 'nv', "
        "'utf8')) } catch (e) { console.log('CASE-node: BLOCKED', e.code) }\n",
        "package.json": json.dumps(
            {"name": "app", "scripts": {"leak": "cat .e''nv || echo CASE-npm: BLOCKED"}}
        ),
    }


@pytest.fixture
def listener() -> Iterator[tuple[int, list[str]]]:
    """A server on 127.0.0.1 that records every request it sees."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.path)
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"reached")

        def log_message(self, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1], seen
    server.shutdown()


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A throwaway HOME with an SSH key in it."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(SSH_SECRET)
    monkeypatch.setenv("HOME", str(home))
    return home


def _sleepers() -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "cmdline").read_bytes() == b"sleep\x00313\x00":
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


async def test_scripts_the_agent_writes_are_held_in_the_sandbox(
    tmp_path: Path, home: Path, listener: tuple[int, list[str]]
) -> None:
    port, seen = listener
    project = tmp_path / "project"
    (project / "config").mkdir(parents=True)
    (project / ".env").write_text(f"SECRET={ENV_SECRET}\n")
    (project / "config" / ".env.local").write_text(f"OTHER={ENV_SECRET}\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (project / "out").symlink_to(outside)
    (tmp_path / "run-tmp").mkdir()
    runs = [
        "python3 env.py", "python3 nested.py", "python3 ssh.py", "python3 escape.py",
        "python3 net.py", "node x.js", "npm run leak", "python3 bg.py",
    ]  # fmt: skip
    scenario = {
        "responses": [
            {"blocks": [call("write", path=n, content=c) for n, c in scripts(port).items()]},
            {"blocks": [call("bash", command=command) for command in runs]},
            {"blocks": [call("bash", command="python3 fork.py")]},
            {"blocks": [{"text": "Done."}]},
            {"blocks": [{"text": "[WIZARD-REMARK] none"}]},
        ]
    }
    with _caps("live-sandbox") as caps:
        policy = build_policy(project, tmp_path / "run-tmp", cap_prefix=caps.prefix)
        live = await run_live(project, scenario, sandbox=policy)
    assert live.result.ok, live.result
    results, sent = _tool_results(live), _everything_sent(live)
    for case in ("env", "nested", "ssh", "escape", "net", "node", "npm", "fork"):
        assert f"CASE-{case}: BLOCKED" in results, (case, results)
    assert "LEAKED" not in results
    assert ENV_SECRET not in sent and SSH_SECRET not in sent
    assert "CASE-bg: started" in results
    assert list(outside.iterdir()) == []  # nothing written through the symlink
    assert seen == []  # the local server saw no request
    assert _sleepers() == []  # the background process ended with its command
    await asyncio.sleep(0)
    live.assert_no_process_left()


def _everything_sent(live: LiveRun) -> str:
    """Every request body the gateway received, as one text."""
    return "\n".join(json.dumps(r.body) for r in live.gateway.requests)


def _tool_results(live: LiveRun) -> str:
    """What the commands gave back to the model: the tool results of the last request."""
    body = live.gateway.requests[-1].body or {}
    results = [
        block
        for message in body.get("messages", [])
        if isinstance(message.get("content"), list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]
    return json.dumps(results)


async def test_the_gateway_is_out_of_reach_of_commands(tmp_path: Path, home: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    probe = _report(
        "gateway",
        "url = open('target').read().strip()\n"
        "result = urllib.request.urlopen(url, timeout=5).status",
    )
    scenario = {
        "responses": [
            {"blocks": [call("write", path="probe.py", content=probe)]},
            {"blocks": [call("bash", command="python3 probe.py")]},
            {"blocks": [{"text": "Done."}]},
            {"blocks": [{"text": "[WIZARD-REMARK] none"}]},
        ]
    }

    def target(session: Any) -> None:  # pi's gateway address, where the script can read it
        (project / "target").write_text(f"{session.launch.proxy_url}/v1/messages")

    live = await run_live(project, scenario, on_start=target)
    assert "CASE-gateway: BLOCKED" in _tool_results(live)
    assert len(live.gateway.requests) == 4  # only pi's own requests reached it
    assert os.environ["HOME"] == str(home)


async def test_a_command_stopped_at_its_timeout_leaves_nothing_in_the_project(
    tmp_path: Path,
) -> None:
    """wizard's `bash` (the anthropic harness's shell) through the runtime's CLI: killed at
    its timeout, the runtime used to leave an empty placeholder for every missing denied
    name (`.bashrc`, `.mcp.json`, `.vscode`, ...) in the project."""
    installed = engine.installed_bundle()
    assert installed is not None
    project = tmp_path / "project"
    project.mkdir()
    (project / "app.py").write_text("print('app')\n")
    private = tmp_path / "private"
    private.mkdir()
    (tmp_path / "run-tmp").mkdir()  # the run's temp folder: the runtime's sockets go there
    policy = build_policy(project, tmp_path / "run-tmp")
    bash = shell_tool(project, SandboxedShell.build(policy, installed, private))
    result = await bash.handler({"command": "sleep 30", "timeout": 1})
    assert result.is_error and "timed out" in result.text
    assert sorted(p.name for p in project.iterdir()) == ["app.py"]


@pytest.mark.parametrize("started_once", [False, True], ids=["cli", "wrapper"])
async def test_wizards_bash_on_the_runtime_started_once_holds_as_the_cli_does(
    tmp_path: Path, started_once: bool
) -> None:
    """The same commands through the runtime's command line per command and through the
    runtime started once (`SandboxedShell.wrapping`, the anthropic harness's bash): a write
    in the project goes through, one outside, a `.git/hooks` one made since and a `.env`
    read are refused, and a command stopped at its timeout leaves nothing behind."""
    installed = engine.installed_bundle()
    assert installed is not None
    project, outside = tmp_path / "project", tmp_path / "outside"
    project.mkdir()
    outside.mkdir()
    (project / ".env").write_text(f"KEY={ENV_SECRET}\n")
    (tmp_path / "run-tmp").mkdir()
    (tmp_path / "private").mkdir()
    shell = SandboxedShell.build(build_policy(project, tmp_path / "run-tmp"), installed,
                                 tmp_path / "private")  # fmt: skip
    async with contextlib.AsyncExitStack() as stack:
        if started_once:
            shell = await stack.enter_async_context(shell.wrapping(project))
        bash = shell_tool(project, shell)
        run = lambda command: bash.handler({"command": command, "timeout": 20})  # noqa: E731
        assert not (await run("echo ok > made.txt && cat made.txt")).is_error
        assert (await run(f"echo x > {outside}/pwned.txt")).is_error
        assert ENV_SECRET not in (await run("cat .env")).text
        assert not (await run("mkdir -p sub && git init -q sub && echo ok")).is_error
        hook = await run("echo x > sub/.git/hooks/pre-commit")
        assert hook.is_error, hook.text
        stopped = await bash.handler({"command": "sleep 30", "timeout": 1})
        assert stopped.is_error and "timed out" in stopped.text
    assert not (outside / "pwned.txt").exists()
    assert sorted(p.name for p in project.iterdir()) == [".env", "made.txt", "sub"]


HOG = "python3 -c 'import time; b = bytearray({mib} << 20); time.sleep({wait})'"


async def test_a_commands_processes_share_one_memory_limit_tmpfs_included(tmp_path: Path) -> None:
    """Two processes each under the per-process limit but over it together, and a command
    that fills a tmpfs past it: the memory cgroup stops both; one process alone under it
    runs. (Where wizard may make no cgroup, memory is held per process only.)"""
    installed = engine.installed_bundle()
    assert installed is not None
    project = tmp_path / "project"
    project.mkdir()
    for folder in ("run-tmp", "private"):
        (tmp_path / folder).mkdir()
    with _caps("live-memory", 200) as caps:
        policy = _memory_policy(project, tmp_path, caps)
        shell = SandboxedShell.build(policy, installed, tmp_path / "private")
        async with shell.wrapping(project) as started:
            bash = shell_tool(project, started)
            run = lambda command: bash.handler({"command": command, "timeout": 60})  # noqa: E731
            alone = await run(HOG.format(mib=120, wait=0) + " && echo ALONE-OK")
            assert "ALONE-OK" in alone.text, alone.text
            hog = HOG.format(mib=120, wait=3)
            together = await run(f"{hog} & {hog} & wait")
            assert "Killed" in together.text, together.text  # one of them, by the kernel
            fill = "head -c 300M /dev/zero > /dev/shm/fill && echo FILLED"
            filled = await run(f"{fill}; ls -s /dev/shm/fill")
            assert "FILLED" not in filled.text, filled.text
            assert "may have used more than the 200 MiB" in filled.text, filled.text


def _memory_policy(project: Path, tmp_path: Path, caps: CommandCaps) -> SandboxPolicy:
    """The policy of a run whose commands may use 200 MiB, joining `caps`' cgroups."""
    environ = {"PATH": os.environ["PATH"], "WIZARD_COMMAND_MEMORY": "200"}
    return build_policy(project, tmp_path / "run-tmp", environ=environ, cap_prefix=caps.prefix)


async def test_pis_commands_share_the_memory_limit_too(tmp_path: Path, home: Path) -> None:
    """The same limit on pi's commands (its host starts each with the policy's prefix): a
    command that fills a tmpfs past it, each write under the per-process limit, is
    stopped, and the model is told why."""
    project = tmp_path / "project"
    project.mkdir()
    (tmp_path / "run-tmp").mkdir()
    fill = (
        "with open('/dev/shm/fill', 'wb') as out:\n"
        "    for _ in range(30):\n"
        "        out.write(bytes(10 << 20))\n"
        "print('FILLED-' + 'ALL')\n"
    )
    scenario = {
        "responses": [
            {"blocks": [call("write", path="fill.py", content=fill)]},
            {"blocks": [call("bash", command="python3 fill.py")]},
            {"blocks": [{"text": "Done."}]},
            {"blocks": [{"text": "[WIZARD-REMARK] none"}]},
        ]
    }
    with _caps("live-memory-pi", 200) as caps:
        live = await run_live(project, scenario, sandbox=_memory_policy(project, tmp_path, caps))
    results = _tool_results(live)
    assert "FILLED-ALL" not in results, results  # the tmpfs never held the 300 MiB
    assert "may have used more than the 200 MiB" in results, results
    live.assert_no_process_left()


async def test_a_runtime_that_does_not_start_fails_each_command_with_its_reason(
    tmp_path: Path,
) -> None:
    """Nothing runs unsandboxed: each command raises the runtime's own words (the tool gate
    hands them to the model as the tool's error)."""
    installed = engine.installed_bundle()
    assert installed is not None
    project = tmp_path / "project"
    project.mkdir()
    (tmp_path / "run-tmp").mkdir()
    (tmp_path / "private").mkdir()
    shell = SandboxedShell.build(build_policy(project, tmp_path / "run-tmp"), installed,
                                 tmp_path / "private")  # fmt: skip
    assert shell.policy.settings_file is not None
    shell.policy.settings_file.write_text("")  # the runtime refuses an empty settings file
    async with shell.wrapping(project) as started:
        bash = shell_tool(project, started)
        for _ in range(2):
            with pytest.raises(OSError, match=r"the sandbox runtime stopped: .* \(empty\)"):
                await bash.handler({"command": "echo ran > ran.txt"})
        assert started.wrapper is not None  # it ended on its own, refusing the settings
        assert await asyncio.wait_for(started.wrapper.process.wait(), 5) == 1
    assert not (project / "ran.txt").exists()


async def test_a_command_reaches_an_allowed_host_and_no_other(tmp_path: Path, home: Path) -> None:
    """The runtime's network bridge is mounted from the pi host's temp folder: in the closed
    system temp folder it was hidden, and no allowed host (not even the package registries)
    could be reached. The allowed host here is served by a sink on a Unix socket, through the
    runtime's proxy, as a proof's probe is."""
    project = tmp_path / "project"
    project.mkdir()
    script = "\n".join((
        "import urllib.request",
        "for host in ('allowed.wizard-test.invalid', 'denied.wizard-test.invalid'):",
        "    try:",
        "        body = urllib.request.urlopen(f'http://{host}/hello', timeout=10).read()",
        "        print('CASE-' + host.split('.')[0] + ': REACHED', body.decode())",
        "    except Exception as exc:",
        "        print('CASE-' + host.split('.')[0] + ': BLOCKED', type(exc).__name__)",
    ))  # fmt: skip
    scenario = {
        "responses": [
            {"blocks": [call("write", path="reach.py", content=script)]},
            {"blocks": [call("bash", command="python3 reach.py")]},
            {"blocks": [{"text": "Done."}]},
            {"blocks": [{"text": "[WIZARD-REMARK] none"}]},
        ]
    }
    policy = build_policy(project, tmp_path / "run-tmp")
    (tmp_path / "run-tmp").mkdir()
    socket = Path(tempfile.mkdtemp(prefix="wizard-sink-")) / "sink.sock"
    try:
        async with ProbeSink(socket) as sink:
            policy = policy.probing("allowed.wizard-test.invalid", socket)
            live = await run_live(project, scenario, sandbox=policy)
    finally:
        shutil.rmtree(socket.parent, ignore_errors=True)
    results = _tool_results(live)
    assert "CASE-allowed: REACHED" in results and "wizard-probe" in results, results
    assert "CASE-denied: BLOCKED" in results, results
    assert [(r.method, r.path) for r in sink.received] == [("GET", "/hello")]
    live.assert_no_process_left()
