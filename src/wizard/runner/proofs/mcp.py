"""The MCP probe: wizard starts the project's MCP server itself, over stdio, in the run's
sandbox with its analytics host on a local sink (`forwarding`); it speaks the protocol with
the `mcp` package's client, lists the tools, calls the one the skill recorded, and expects a
capture for that call at the sink."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import shlex
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from wizard.programs.types import McpProof
from wizard.runner.proofs.finding import Finding, failed, not_run, proven
from wizard.runner.proofs.forwarding import NO_SANDBOX, PROBE_URL, Probe, python_in, read_record
from wizard.runner.proofs.sink import ProbeSink, Received
from wizard.tools.child_env import child_env
from wizard.tools.shell import SandboxedShell, shell_command

START_TIMEOUT_S = 45.0
CALL_TIMEOUT_S = 30.0
# How long a capture may take to arrive: SDKs send from a queue, at an interval, or when the
# server stops (the server is stopped after the first wait).
CAPTURE_WAIT_S = (2.0, 5.0)
_PYTHONS = ("python", "python3")


@dataclass(frozen=True)
class Server:
    """The server a skill recorded: how to start it, and the one call to make."""

    command: list[str]
    tool: str
    arguments: dict[str, Any]
    folder: str = "."


def read_server(project: Path, file: str) -> Server | str:
    """The server recorded in `file`, or why there is none."""
    spec = read_record(project, file, "server to start")
    if isinstance(spec, str):
        return spec
    try:
        server = Server([str(part) for part in spec["command"]], str(spec["tool"]),
                        dict(spec.get("arguments", {})), str(spec.get("folder", ".")))  # fmt: skip
    except (ValueError, KeyError, TypeError) as exc:
        return f"{file} is not a server (command, tool, arguments): {exc}"
    if not server.command:
        return f"{file}: the command is empty"
    return server


async def mcp_probe(
    proof: McpProof,
    project: Path,
    sandbox: SandboxedShell | None,
    private: Path,
) -> Finding:
    """Start the recorded server, call its tool, and look for the capture at the sink."""
    if sandbox is None:
        return not_run(NO_SANDBOX)
    server = read_server(project, proof.entry_file)
    if isinstance(server, str):
        return failed(server)
    probe = Probe.open(sandbox, private)
    argv = list(server.command)
    if argv[0] in _PYTHONS:
        argv[0] = python_in(project, server.folder)
    variables = {proof.host_variable: PROBE_URL, proof.key_variable: probe.key}
    script = probe.script(server.folder, variables, f"exec {shlex.join(argv)}")
    stderr = probe.socket.with_name("server-stderr.log")  # in the probe's private folder
    async with ProbeSink(probe.socket) as sink:

        def arrived() -> bool:
            return bool(_captures(sink.received, server.tool, probe.key))

        call = _call(shell_command(script, probe.sandbox), project, server, stderr,
                     lambda: _wait_for(arrived, CAPTURE_WAIT_S[0]))  # fmt: skip
        try:
            called = await asyncio.wait_for(call, START_TIMEOUT_S + CALL_TIMEOUT_S * 2)
        except Exception as exc:  # the server would not start or answer: why is in its stderr
            return _not_started(server, exc, stderr.read_text(errors="replace"))
        if isinstance(called, Finding):
            return called
        await _wait_for(arrived, CAPTURE_WAIT_S[1])  # stopped, the server flushed its queue
    return _judge(proof, server, sink.received, probe.key)


async def _call(
    argv: list[str],
    project: Path,
    server: Server,
    stderr: Path,
    settle: Callable[[], Awaitable[None]],
) -> Finding | None:
    """Start the server (its errors into `stderr`), list its tools, call the recorded one and
    `settle` while it still runs; a finding if that fails."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    parameters = StdioServerParameters(command=argv[0], args=argv[1:], env=child_env(),
                                       cwd=str(project))  # fmt: skip
    async with (
        _text_file(stderr) as errors,
        stdio_client(parameters, errlog=errors) as (read, write),
        ClientSession(read, write) as session,
    ):
        await asyncio.wait_for(session.initialize(), START_TIMEOUT_S)
        tools = [tool.name for tool in (await session.list_tools()).tools]
        if server.tool not in tools:
            return failed(f"the server has no tool {server.tool!r} (it has: {', '.join(tools)})")
        await session.call_tool(server.tool, server.arguments, read_timeout_seconds=CALL_TIMEOUT_S)
        await settle()
    return None


@contextlib.asynccontextmanager
async def _text_file(path: Path) -> AsyncIterator[TextIO]:
    with path.open("w") as file:
        yield file


def _not_started(server: Server, exc: BaseException, stderr: str) -> Finding:
    missing = [line for line in stderr.splitlines() if "ModuleNotFoundError" in line
               or "Cannot find module" in line or "Cannot find package" in line]  # fmt: skip
    if missing:
        return not_run(f"a dependency is missing ({missing[-1].strip()[:200]}): install the "
                       "project's dependencies to prove it")  # fmt: skip
    tail = " ".join(stderr.strip().splitlines()[-3:])[:300]
    why = f"{type(exc).__name__}: {exc}".strip()
    return failed(f"the server ({shlex.join(server.command)}) did not start or answer: "
                  f"{tail or why}")  # fmt: skip


def _body(received: Received) -> bytes:
    if received.header("content-encoding") == "gzip" or received.body[:2] == b"\x1f\x8b":
        try:
            return gzip.decompress(received.body)
        except OSError:
            return received.body
    return received.body


def _captures(received: list[Received], tool: str, key: str) -> list[Received]:
    """The requests that capture a call of `tool`."""
    return [r for r in received if tool.encode() in _body(r) and key.encode() in _body(r)]


async def _wait_for(found: Callable[[], bool], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not found() and time.monotonic() < deadline:
        await asyncio.sleep(0.1)


def _judge(proof: McpProof, server: Server, received: list[Received], key: str) -> Finding:
    if _captures(received, server.tool, key):
        return proven(f"wizard called the tool {server.tool} over stdio, and a capture naming "
                      f"it arrived with the key from {proof.key_variable}")  # fmt: skip
    named = [r for r in received if server.tool.encode() in _body(r)]
    if named:
        return failed(f"the capture of {server.tool} did not carry the key from "
                      f"{proof.key_variable} (a key written into the code?)")  # fmt: skip
    others = f" ({len(received)} other request(s))" if received else ""
    return failed(f"calling the tool {server.tool} sent no capture to the host in "
                  f"{proof.host_variable}{others}")  # fmt: skip
