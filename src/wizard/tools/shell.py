"""The `bash` host tool: one command in the project, in the OS sandbox, with a scrubbed
environment, a timeout and a bounded output.

The pi harness uses pi's own `bash` (wrapped by the sandbox runtime inside pi's host); a
harness whose engine's shell cannot be wrapped (the Claude Agent SDK's CLI) offers this tool
instead, so every command of every harness runs under the same policy.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import secrets
import shlex
import signal
import socket
import stat
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from wizard.code_names import ROOT_NAMES
from wizard.tools.base import HostTool, ToolResult, schema
from wizard.tools.child_env import child_env
from wizard.tools.limits import OUTPUT_BYTES, CommandLimits
from wizard.tools.sandbox import SandboxPolicy

# The shell's host tool (the anthropic harness's stand-in for Claude Code's own).
SHELL_TOOL = "bash"
MAX_OUTPUT_CHARS = 30_000
# A shell's exit codes for a command it could not run: not executable, not found.
COULD_NOT_RUN = (126, 127)
# A stopped command gets this long to end (the sandbox runtime then removes its mount
# placeholders) before it is killed.
STOP_GRACE_S = 3.0
# Names the sandbox runtime mounts over in the project; where one is missing it leaves an
# empty placeholder, which a killed runtime cannot remove.
PLACEHOLDERS = (
    *ROOT_NAMES, ".gitconfig", ".gitmodules", ".bashrc", ".bash_profile", ".zshrc", ".zprofile",
    ".profile", ".ripgreprc", ".mcp.json", ".vscode", ".idea", ".claude/commands",
    ".claude/agents",
)  # fmt: skip


class SandboxRuntime(Protocol):
    """Where the sandbox runtime is installed (the engine bundle: `engines.bundle.NodeBundle`)."""

    @property
    def prefix(self) -> Path: ...
    @property
    def node(self) -> Path: ...
    @property
    def sandbox_entry(self) -> Path: ...


WRAPPER_SCRIPT = Path(__file__).with_name("sandbox_wrap.mjs")


@dataclass(frozen=True)
class SandboxedShell:
    """How wizard runs a command in the OS sandbox itself (checks, probes, the anthropic
    harness's `bash`): the runtime's command line, run by Node, with the policy's settings;
    or, once `wrapping` has started the runtime for the policy, the line it wraps a command
    in, run directly."""

    policy: SandboxPolicy
    node: Path
    cli: Path
    wrapper: SandboxWrapper | None = field(default=None, compare=False)

    @classmethod
    def build(cls, policy: SandboxPolicy, runtime: SandboxRuntime, private: Path) -> SandboxedShell:
        """`policy` through `runtime`'s command line: the runtime's own files readable, its
        settings written into `private` (a folder commands may not open)."""
        policy = policy.reading(runtime.prefix).with_settings_file(private)
        return cls(policy, runtime.node, runtime.sandbox_entry.with_name("cli.js"))

    def with_policy(self, policy: SandboxPolicy) -> SandboxedShell:
        """This shell with another policy (whose settings file is written), through the
        runtime's command line until it is `wrapping` too."""
        return replace(self, policy=policy, wrapper=None)

    def make_ahead(
        self, folder: Path, environ: Mapping[str, str] | None = None, *, after_tool: bool = False
    ) -> None:
        """Have the next command's sandbox made now, for a command in `folder` (with the
        environment `run_command` gives it), as each command's end has the one after it
        made, unless this shell is not `wrapping`: the first command's, unless a command or
        another tool came first (`SandboxWrapper.prepare_first`); or, `after_tool`, the one
        after another tool's call has ended, unless one stands (`prepare_next`)."""
        if self.wrapper is not None:
            env = _command_env(self.policy, environ)
            make = self.wrapper.prepare_next if after_tool else self.wrapper.prepare_first
            make(folder, env, self.policy.cap_prefix)

    @contextlib.asynccontextmanager
    async def wrapping(
        self, folder: Path, reaping: list[asyncio.Future[Any]] | None = None
    ) -> AsyncIterator[SandboxedShell]:
        """This shell with the runtime started once on its policy, in `folder`, for as long
        as the block lasts; each command then costs no Node and no runtime start-up. The
        wait for its Node's end once it has stopped the runtime goes to `reaping`, if given
        (`SandboxWrapper.close`)."""
        wrapper = await SandboxWrapper.start(self, folder)
        try:
            yield replace(self, wrapper=wrapper)
        finally:
            await wrapper.close(reaping)
            remove_placeholders(folder, wrapper.absent)


@dataclass
class Ahead:
    """A sandbox made ahead: its process, waiting for its commands on `control`; it `keeps`
    when it can run more than one (`sandbox_ahead.mjs`), and is `open` between them."""

    process: asyncio.subprocess.Process
    control: socket.socket
    folder: Path
    env: dict[str, str]
    keeps: bool = False
    open: bool = False

    async def run(self, command: str, timeout: float) -> tuple[int | None, str]:
        """Hand it `command`; as `run_command`. It is `open` after if it told the command's
        end (by a token only wizard knows), else it has ended with the command."""
        self.open = False
        token = secrets.token_hex(16).encode()
        try:
            line = f"{self.folder}\0{command}\0".encode(errors="surrogateescape") + token + b"\0"
            await asyncio.get_running_loop().sock_sendall(self.control, line)
        except OSError:
            pass  # it ended first: its exit code says so
        finally:
            if not self.keeps:
                self.control.close()
        code, text = await _collect(self.process, timeout, token if self.keeps else None)
        self.open = code is not None and self.process.returncode is None
        return code, text


def _inner(command: str, policy: SandboxPolicy) -> str:
    """`command` with the policy's variables (private caches, temp folder) set inside the
    sandbox."""
    exports = " ".join(f"{name}={shlex.quote(value)}" for name, value in policy.command_env.items())
    return f"export {exports}\n{command}" if exports else command


def _command_env(policy: SandboxPolicy, environ: Mapping[str, str] | None) -> dict[str, str]:
    """The environment a command is wrapped with: the scrubbed one, and the runtime's own."""
    return {**child_env(environ), **_runtime_env(policy)}


def _runtime_env(policy: SandboxPolicy) -> dict[str, str]:
    """The runtime puts its network bridge's sockets in its TMPDIR and mounts them into the
    sandbox: in a folder the policy closes (the system temp folder) they would be hidden and
    every allowed host unreachable; the run's temp folder is open to the command."""
    runtime_tmp = policy.command_env.get("TMPDIR")
    return {"TMPDIR": runtime_tmp} if runtime_tmp else {}


def shell_command(command: str, sandbox: SandboxedShell | None) -> list[str]:
    """The argv that runs `command`, in the sandbox when given, through the runtime's
    command line."""
    if sandbox is None:
        return ["bash", "-c", command]
    policy, node, cli = sandbox.policy, sandbox.node, sandbox.cli
    settings = policy.settings_file
    assert settings is not None, "a sandboxed shell needs the policy's settings file"
    env = "".join(f"{name}={shlex.quote(value)} " for name, value in _runtime_env(policy).items())
    wrapped = f"{env}exec {shlex.quote(str(node))} {shlex.quote(str(cli))} --settings "
    wrapped += f"{shlex.quote(str(settings))} -c {shlex.quote(_inner(command, policy))}"
    return ["bash", "-c", policy.cap_prefix + wrapped]


class SandboxWrapper:
    """The sandbox runtime started once on a shell's policy (`sandbox_wrap.mjs`, in Node): it
    turns a command into the line that runs it in the sandbox, and cleans up after it. Its
    network proxies live as long as it does. One command at a time."""

    def __init__(self, process: asyncio.subprocess.Process, folder: Path) -> None:
        self.process = process
        # Where its commands run, and the placeholder names not there before any: a sandbox
        # made ahead stands its placeholders in between commands.
        self.folder = folder
        self.absent = absent_placeholders(folder)
        self.lock = asyncio.Lock()  # held from a command's wrapping to its clean-up
        self._asking = asyncio.Lock()  # one request at a time on the runtime's pipe
        self._ids = itertools.count(1)
        # The next command's sandbox, being made or ready (`prepare`).
        self._next: asyncio.Future[Ahead] | None = None
        # Whether a command was handed over or a sandbox thrown away (for another tool): the
        # first sandbox is made ahead only before either (`prepare_first`).
        self._begun = False
        # What the runtime says on stderr, read as it comes (a full pipe would stall it): the
        # end of it names why it stopped.
        self._said = bytearray()
        self._reading = asyncio.ensure_future(self._read_stderr())
        # The runtime starts while the engine does; the first command waits for it.
        self._ready = asyncio.ensure_future(self._answer())

    @classmethod
    async def start(cls, shell: SandboxedShell, folder: Path) -> SandboxWrapper:
        """The runtime, starting on `shell`'s policy in `folder` (where its commands run, as
        its command line would be); an `OSError` if Node cannot be started, and every command
        fails with one if the runtime does not start."""
        settings = shell.policy.settings_file
        assert settings is not None, "a sandboxed shell needs the policy's settings file"
        process = await asyncio.create_subprocess_exec(
            str(shell.node), str(WRAPPER_SCRIPT), str(shell.cli.with_name("index.js")),
            str(settings), cwd=folder, env=child_env(_runtime_env(shell.policy)),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, start_new_session=True,
        )  # fmt: skip
        return cls(process, folder)

    async def wrapped(self, command: str, folder: Path) -> str:
        """The line that runs `command` in the sandbox, from `folder`."""
        asked = {"op": "wrap", "command": command, "cwd": str(folder)}
        return str((await self._ask(asked))["wrapped"])

    async def cleanup(self) -> None:
        """After a wrapped command: what the runtime mounted for it goes."""
        await self._ask({"op": "cleanup"})

    def prepare(
        self, folder: Path, env: Mapping[str, str], cap_prefix: str, kept: Ahead | None = None
    ) -> None:
        """Have the next command's sandbox ready, while the model thinks (`sandbox_ahead.mjs`):
        `kept` (the last command's, still open) if all it saw is as it was; else a new one
        that waits for its command on a socket, the folders it saw noted."""
        self._next = asyncio.ensure_future(self._keep_or_make(kept, folder, dict(env), cap_prefix))

    def prepare_first(self, folder: Path, env: Mapping[str, str], cap_prefix: str) -> None:
        """`prepare` the first command's sandbox, unless a command or another tool has come
        (each command's end prepares the next; another tool must find no sandbox standing)."""
        if not self._begun and self._next is None:
            self.prepare(folder, env, cap_prefix)

    def prepare_next(self, folder: Path, env: Mapping[str, str], cap_prefix: str) -> None:
        """`prepare` the next command's sandbox once another tool's call has ended (which
        threw away the one that stood), unless one stands or is being made."""
        if self._next is None:
            self.prepare(folder, env, cap_prefix)

    async def _keep_or_make(
        self, kept: Ahead | None, folder: Path, env: dict[str, str], cap_prefix: str
    ) -> Ahead:
        if kept is not None:
            try:
                fits = (await self._ask({"op": "unchanged"})).get("unchanged") is True
            except BaseException:  # closing, or the runtime gone: it goes too
                with contextlib.suppress(OSError):
                    await self._drop(kept)
                raise
            if fits:
                return kept
            # Its placeholders go before the next is made (one removed from under a
            # sandbox would unmask its name there).
            await self._drop(kept)
            remove_placeholders(self.folder, self.absent)
        return await self._make(folder, env, cap_prefix)

    async def _make(self, folder: Path, env: dict[str, str], cap_prefix: str) -> Ahead:
        wrapped = str((await self._ask({"op": "ahead", "cwd": str(folder)}))["wrapped"])
        ours, theirs = socket.socketpair()
        # The stub talks on fd 3 (`sandbox_ahead.mjs`): the socket moves there before the
        # limits and the sandbox, outside it.
        fd = theirs.fileno()
        to_three = f"exec 3<&{fd} {fd}<&-\n" if fd != 3 else ""
        try:
            process = await asyncio.create_subprocess_exec(
                "bash", "-c", to_three + cap_prefix + wrapped, cwd=folder, env=env,
                stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT, start_new_session=True,
                pass_fds=(fd,),
            )  # fmt: skip
        except BaseException:
            ours.close()
            await self.cleanup()
            raise
        finally:
            theirs.close()
        ahead = Ahead(process, ours, folder, env)
        try:
            ours.setblocking(False)
            said = await asyncio.get_running_loop().sock_recv(ours, 1)
            if said not in (b"R", b"K"):  # ready for one command, or for one after another
                raise OSError("the sandbox made ahead did not start")
            ahead.keeps = said == b"K"
            await self._ask({"op": "note", "cwd": str(folder)})
        except BaseException:
            await self._drop(ahead)
            raise
        return ahead

    async def take(self, command: str, folder: Path, env: Mapping[str, str]) -> Ahead | None:
        """The sandbox made ahead, for `command` in `folder` with `env`, if it is ready and
        nothing it saw has changed; else None (it is thrown away: wrap the command anew)."""
        self._begun = True
        made, self._next = self._next, None
        if made is None:
            return None
        try:
            ahead = await made
        except (OSError, ValueError):
            return None
        fits = ahead.process.returncode is None and ahead.folder == folder and ahead.env == env
        fits = fits and "\0" not in command  # which `bash -c` refuses, as before
        if fits and (await self._ask({"op": "unchanged"})).get("unchanged") is True:
            return ahead
        await self._drop(ahead)
        return None

    async def discard(self) -> None:
        """Throw away the sandbox made ahead, if any: returns once it is gone, the runtime
        has removed what it mounted for it, and its placeholders are out of the project.

        One still being made is waited for, never cancelled: the runtime would go on making
        it, and its placeholders would appear after this returned (in front of the file tool
        this clears the way for), with nobody left to remove them."""
        self._begun = True
        async with self.lock:
            made, self._next = self._next, None
            if made is None:
                return
            with contextlib.suppress(OSError, ValueError):
                await self._drop(await made)
            remove_placeholders(self.folder, self.absent)

    async def before_call(self, name: str) -> None:
        """Before the gate judges a call of any tool but this shell (`_ShellAheadGate`): the
        next command's sandbox goes (what the tool changes must be in the next one, and
        neither the fence nor the tool may find its placeholders: `.husky` as an empty file
        "is not a folder")."""
        if name != SHELL_TOOL:
            await self.discard()

    async def _drop(self, ahead: Ahead) -> None:
        # Its socket closed, the stub exits and the sandbox winds down as after a command; a
        # kill could leave bubblewrap's init running outside the group (`sandbox_ahead.mjs`).
        ahead.control.close()
        await _ended(ahead.process)
        await self.cleanup()

    async def _ask(self, request: dict[str, str]) -> dict[str, Any]:
        await self._ready
        assert self.process.stdin is not None
        async with self._asking:
            number = next(self._ids)
            self.process.stdin.write(json.dumps({**request, "id": number}).encode() + b"\n")
            await self.process.stdin.drain()
            answer = await self._answer()
            while isinstance(answer.get("id"), int) and answer["id"] < number:
                answer = await self._answer()  # the answer to a request whose caller left
        if answer.get("id") != number or "error" in answer:
            raise OSError(f"the sandbox runtime refused: {answer.get('error', answer)}")
        return answer

    async def _left(self) -> bool:
        """Whether the runtime, its stdin closed, says it has stopped (within the grace a
        process told to end gets), the answers still unread passed over."""
        assert self.process.stdout is not None
        async with self._asking:
            with contextlib.suppress(TimeoutError, ValueError):
                async with asyncio.timeout(STOP_GRACE_S):
                    while line := await self.process.stdout.readline():
                        if json.loads(line) == {"left": True}:
                            return True
        return False

    async def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        while chunk := await self.process.stderr.read(4096):
            self._said = (self._said + chunk)[-4096:]

    async def _answer(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = await self.process.stdout.readline()
        if not line:
            await asyncio.wait([self._reading], timeout=1)
            said = self._said.decode(errors="replace").strip()
            raise OSError(f"the sandbox runtime stopped: {said or 'no reason given'}")
        answer: dict[str, Any] = json.loads(line)
        return answer

    async def close(self, reaping: list[asyncio.Future[Any]] | None = None) -> None:
        """End the runtime (closing its stdin lets it stop its proxies first), and the
        sandbox made ahead before it: one still being made is stopped where it is, as the
        runtime ends next and the shell removes the placeholders after it (`SandboxedShell`);
        nor is a command still running waited for. Once it says it has stopped the runtime,
        what is left is Node's own teardown (10 ms here): with `reaping`, that wait goes
        there."""
        made, self._next = self._next, None
        if made is not None:
            made.cancel()
            with contextlib.suppress(OSError, ValueError, asyncio.CancelledError):
                await self._drop(await made)
        process = self.process
        if process.stdin is not None:
            process.stdin.close()
        if reaping is not None and self._ready.done() and await self._left():
            reaping.append(asyncio.ensure_future(_ended(process)))
        else:
            await _ended(process)
        for task in (self._ready, self._reading):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, OSError, ValueError):
                await task


def shell_tool(
    project_dir: Path,
    sandbox: SandboxedShell | None,
    environ: Mapping[str, str] | None = None,
) -> HostTool:
    """`bash(command, timeout?)` in `project_dir`, in the sandbox when given."""

    limits = sandbox.policy.limits if sandbox is not None else CommandLimits()

    async def run(args: Mapping[str, Any]) -> ToolResult:
        command = str(args.get("command", ""))
        timeout = limits.timeout(args.get("timeout"))
        if sandbox is not None and sandbox.wrapper is not None:
            return await _run(command, timeout)  # its runtime removes them (`run_command`)
        absent = absent_placeholders(project_dir)
        try:
            return await _run(command, timeout)
        finally:
            remove_placeholders(project_dir, absent)

    async def _run(command: str, timeout: float) -> ToolResult:
        code, text = await run_command(command, sandbox, project_dir, timeout, environ)
        if code is None:
            return ToolResult(f"Error: the command timed out after {timeout:g} s.", is_error=True)
        if len(text) > MAX_OUTPUT_CHARS:
            text = "[output cut: showing the end]\n" + text[-MAX_OUTPUT_CHARS:]
        note = sandbox.policy.read_only_note if sandbox is not None else ""
        if note and code != 0 and "Read-only file system" in text:
            text += f"\n{note}"
        if limit := limits.note(code, text):
            text += f"\n{limit}"
        return ToolResult(text if code == 0 else f"{text}\n(exit code {code})", is_error=code != 0)

    return HostTool(
        SHELL_TOOL,
        "Run a bash command in the project folder; returns its output. Package managers, "
        "builds, tests and read-only inspection.",
        schema({"command": {"type": "string"}, "timeout": {"type": "number"}}, ["command"]),
        run,
    )


async def run_command(
    command: str,
    sandbox: SandboxedShell | None,
    folder: Path,
    timeout: float,
    environ: Mapping[str, str] | None = None,
) -> tuple[int | None, str]:
    """Run `command` in `folder` (in the OS sandbox when given), in a session of its own with
    a scrubbed environment; its exit code (None: it timed out) and the end of its output
    (at most `OUTPUT_BYTES`: a command that prints gigabytes costs wizard no memory)."""
    wrapper = sandbox.wrapper if sandbox is not None else None
    if sandbox is None or wrapper is None:
        return await _run_argv(shell_command(command, sandbox), folder, timeout,
                               child_env(environ))  # fmt: skip
    inner = _inner(command, sandbox.policy)
    env = _command_env(sandbox.policy, environ)
    async with wrapper.lock:
        ahead = await wrapper.take(inner, folder, env)
        try:
            if ahead is not None:
                return await ahead.run(inner, timeout)
            wrapped = await wrapper.wrapped(inner, folder)
            argv = ["bash", "-c", sandbox.policy.cap_prefix + wrapped]
            return await _run_argv(argv, folder, timeout, env)
        finally:
            kept = ahead if ahead is not None and ahead.open else None
            if kept is None:  # the sandbox ended with the command
                await wrapper.cleanup()
                remove_placeholders(wrapper.folder, wrapper.absent)
            # Then the next command's sandbox, once the placeholders of this one went (one
            # removed from under a sandbox would unmask its name there), within the lock: no
            # other command's clean-up can come between its making and its noting.
            wrapper.prepare(folder, env, sandbox.policy.cap_prefix, kept)


async def _run_argv(
    argv: list[str], folder: Path, timeout: float, env: Mapping[str, str]
) -> tuple[int | None, str]:
    process = await asyncio.create_subprocess_exec(
        *argv,
        cwd=folder,
        env=dict(env),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
    )
    return await _collect(process, timeout)


async def _collect(
    process: asyncio.subprocess.Process, timeout: float, end: bytes | None = None
) -> tuple[int | None, str]:
    """A started command's exit code (None: it timed out, and was stopped) and the end of its
    output: up to the line `end` and then the exit code begin, if it comes (a kept sandbox
    says so after each command), else up to the end of it all."""
    tail = bytearray()
    dropped = 0

    async def read() -> int | None:
        nonlocal dropped
        assert process.stdout is not None
        while chunk := await process.stdout.read(65536):
            # `end`, and the code after it, may have begun in the chunk before.
            start = max(len(tail) - len(end or b"") - 8, 0)
            tail.extend(chunk)
            if end is not None and (at := tail.find(end, start)) >= 0:
                if (line := tail.find(b"\n", at)) >= 0:
                    code = int(tail[at + len(end) : line])
                    del tail[at:]
                    return code
            elif len(tail) > OUTPUT_BYTES:
                dropped += len(tail) - OUTPUT_BYTES
                del tail[: len(tail) - OUTPUT_BYTES]
        return await process.wait()

    told = False
    try:
        code = await asyncio.wait_for(read(), timeout)
        told = True
    except TimeoutError:
        return None, ""
    finally:  # timed out or cancelled: the command and all it started go
        if not told and process.returncode is None:
            await _stop_group(process)
    cut = f"[{dropped:,} bytes of output before this were not kept]\n" if dropped else ""
    return code, cut + tail.decode(errors="replace")


async def _ended(process: asyncio.subprocess.Process) -> None:
    """Give a process told to end `STOP_GRACE_S` to do so, then kill its group."""
    try:
        await asyncio.wait_for(process.wait(), STOP_GRACE_S)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        await process.wait()


async def _stop_group(process: asyncio.subprocess.Process) -> None:
    """SIGTERM the command's process group, so the runtime cleans up; SIGKILL what is left."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(process.wait()), STOP_GRACE_S)
        os.killpg(process.pid, signal.SIGKILL)


def absent_placeholders(project_dir: Path) -> list[str]:
    """The names the sandbox runtime may stand a placeholder in for that are not there now."""
    return [n for n in (*PLACEHOLDERS, ".claude") if not os.path.lexists(project_dir / n)]


def remove_placeholders(project_dir: Path, absent: list[str]) -> None:
    """Remove the empty placeholder files a killed sandbox runtime left where nothing was
    (`absent`, from `absent_placeholders` before its commands)."""
    for name in absent:
        path = project_dir / name
        with contextlib.suppress(OSError):
            info = path.lstat()
            if stat.S_ISREG(info.st_mode) and info.st_size == 0:
                path.unlink()
    if ".claude" in absent:  # made only to hold placeholders: rmdir keeps it if not empty
        with contextlib.suppress(OSError):
            (project_dir / ".claude").rmdir()
