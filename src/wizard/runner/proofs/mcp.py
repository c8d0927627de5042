"""The MCP probe: wizard starts the project's MCP server itself, over stdio, in the run's
sandbox with its analytics host on a local sink (`forwarding`); it speaks the protocol with
the `mcp` package's client, lists the tools, calls the one the skill recorded, and expects a
capture caused by that call at the sink: an event sent after the call began, naming the tool
as a property (or as the event), with the probe's key. What a server sends as it starts or
lists its tools (`$mcp_tools_list` names every tool) never counts.

The server must be the app's (`claims`). A tool that fails (it needs a service the sandbox
cannot reach, or a credential of its own) still proves the capture when its event arrived;
a server that cannot start without a credential of its own is "cannot tell", not "failed".
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import gzip
import json
import shlex
import time
import urllib.parse
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

from wizard.programs.types import McpProof
from wizard.runner.proofs.claims import server_is_apps
from wizard.runner.proofs.codebase import Codebase
from wizard.runner.proofs.finding import Finding, failed, not_run, proven
from wizard.runner.proofs.forwarding import (
    NO_SANDBOX,
    PROBE_URL,
    Probe,
    own_credential,
    python_in,
    read_record,
)
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
    code: Codebase,
    sandbox: SandboxedShell | None,
    private: Path,
    unsandboxable: str | None = None,
) -> Finding:
    """Start the recorded server, call its tool, and look for the capture at the sink."""
    project = code.root
    server = read_server(project, proof.entry_file)
    if isinstance(server, str):
        return failed(server)
    claim = await asyncio.to_thread(server_is_apps, code, project, server.command,
                                    server.folder, server.tool)  # fmt: skip
    if isinstance(claim, Finding):
        return claim
    if sandbox is None or unsandboxable is not None:
        return not_run(unsandboxable or NO_SANDBOX)
    probe = Probe.open(sandbox, private)
    argv = list(server.command)
    if argv[0] in _PYTHONS:
        argv[0] = python_in(project, server.folder)
    variables = {proof.host_variable: PROBE_URL, proof.key_variable: probe.key}
    script = probe.script(server.folder, variables, f"exec {shlex.join(argv)}")
    stderr = probe.socket.with_name("server-stderr.log")  # in the probe's private folder
    async with ProbeSink(probe.socket) as sink:
        calling = _Calling(sink)

        def arrived() -> bool:
            return bool(_captures(calling.events(), server.tool, probe.key))

        call = _call(shell_command(script, probe.sandbox), project, server, stderr, calling,
                     lambda: _wait_for(arrived, CAPTURE_WAIT_S[0]))  # fmt: skip
        try:
            called = await asyncio.wait_for(call, START_TIMEOUT_S + CALL_TIMEOUT_S * 2)
        except Exception as exc:  # the server would not start or answer
            if calling.began:  # a capture the call caused still proves it
                await _wait_for(arrived, CAPTURE_WAIT_S[1])
                if arrived():
                    return _judge(proof, server, calling.events(), probe.key, claim, f"{exc!r}")
            return _not_started(server, exc, stderr.read_text(errors="replace"))
        if isinstance(called, Finding):
            return called
        await _wait_for(arrived, CAPTURE_WAIT_S[1])  # stopped, the server flushed its queue
    return _judge(proof, server, calling.events(), probe.key, claim, called)


@dataclass
class _Calling:
    """Where the sink's requests stood when the tool call began, and when that was: only
    events that arrived later, and were made later, count."""

    sink: ProbeSink
    mark: int | None = None
    began_at: float = 0.0

    @property
    def began(self) -> bool:
        return self.mark is not None

    def begin(self) -> None:
        self.mark, self.began_at = len(self.sink.received), time.time()

    def events(self) -> list[tuple[dict[str, Any], str]]:
        """The events sent since the call began (an SDK's queue may deliver one made at
        start-up after it: its own timestamp says when it was made)."""
        if self.mark is None:
            return []
        return [(event, key) for request in self.sink.received[self.mark :]
                for event, key in events(request)
                if not _made_before(event, self.began_at)]  # fmt: skip


def _made_before(event: dict[str, Any], moment: float) -> bool:
    """Whether `event`'s timestamp (when it has one) is before `moment`, by more than a
    timestamp's rounding (milliseconds): the server runs on this machine's clock."""
    stamp = event.get("timestamp") or (event.get("properties") or {}).get("$time")
    try:
        when = (float(stamp) if isinstance(stamp, int | float)
                else datetime.fromisoformat(str(stamp)).timestamp())  # fmt: skip
    except (TypeError, ValueError):
        return False
    return when < moment - 0.01


async def _call(
    argv: list[str],
    project: Path,
    server: Server,
    stderr: Path,
    calling: _Calling,
    settle: Callable[[], Awaitable[None]],
) -> Finding | str:
    """Start the server (its errors into `stderr`), list its tools, call the recorded one and
    `settle` while it still runs; a finding if that fails, else the tool's error ("" when it
    answered)."""
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
        calling.begin()
        # Timed here, not by the client's `read_timeout_seconds` (a `timedelta` in mcp 1.x,
        # seconds in 2.x): the probe speaks to a server with either.
        result = await asyncio.wait_for(session.call_tool(server.tool, server.arguments),
                                        CALL_TIMEOUT_S)  # fmt: skip
        await settle()
    if not getattr(result, "isError", False) and not getattr(result, "is_error", False):
        return ""
    said = " ".join(getattr(part, "text", "") for part in getattr(result, "content", []) or [])
    return said.strip()[:300] or "the tool answered with an error"


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
    if (credential := own_credential(stderr)) is not None:
        return not_run(f"the server needs a credential of its own to start ({credential}), "
                       "which the probe does not have: cannot tell")  # fmt: skip
    tail = " ".join(stderr.strip().splitlines()[-3:])[:300]
    why = f"{type(exc).__name__}: {exc}".strip()
    return failed(f"the server ({shlex.join(server.command)}) did not start or answer: "
                  f"{tail or why}")  # fmt: skip


def _body(received: Received) -> bytes:
    encoding = received.header("content-encoding")
    if encoding == "gzip" or received.body[:2] == b"\x1f\x8b":
        with contextlib.suppress(OSError):
            return gzip.decompress(received.body)
    if encoding == "deflate":
        with contextlib.suppress(zlib.error):
            return zlib.decompress(received.body)
    return received.body


def events(received: Received) -> list[tuple[dict[str, Any], str]]:
    """The events a capture request carries, each with the key it was sent with (the body's
    `api_key` or `token`, the event's own, or the `Authorization` header's)."""
    body = _body(received)
    if b"data=" in body[:5] and "form" in received.header("content-type"):
        fields = urllib.parse.parse_qs(body.decode(errors="replace"))
        body = _unbase64(fields.get("data", [""])[0])
    try:
        document = json.loads(body)
    except ValueError:
        return []
    header = received.header("authorization").removeprefix("Bearer ").strip()
    if isinstance(document, dict):
        batch = document.get("batch") or document.get("events")
        items = batch if isinstance(batch, list) else [document]
        request_key = str(document.get("api_key") or document.get("token") or header)
    else:
        items, request_key = (document if isinstance(document, list) else []), header
    found = []
    for item in items:
        if isinstance(item, dict) and isinstance(item.get("properties", {}), dict):
            properties = item.get("properties", {})
            key = item.get("api_key") or properties.get("token") or request_key
            found.append((item, str(key)))
    return found


def _unbase64(value: str) -> bytes:
    try:
        return base64.b64decode(value + "=" * (-len(value) % 4))
    except ValueError:
        return value.encode()


def _names(event: dict[str, Any], tool: str) -> bool:
    """Whether an event is about a call of `tool`: the tool is its name, or the value of one
    of its properties (not one item of a list of every tool)."""
    properties = event.get("properties") or {}
    return event.get("event") == tool or any(value == tool for value in properties.values())


def _captures(sent: list[tuple[dict[str, Any], str]], tool: str, key: str) -> list[dict[str, Any]]:
    """The events among `sent` (each with its key) that capture a call of `tool` with
    `key`."""
    return [event for event, sent_with in sent if _names(event, tool) and sent_with == key]


async def _wait_for(found: Callable[[], bool], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not found() and time.monotonic() < deadline:
        await asyncio.sleep(0.1)


def _judge(
    proof: McpProof,
    server: Server,
    after: list[tuple[dict[str, Any], str]],
    key: str,
    claim: str,
    tool_error: str = "",
) -> Finding:
    if _captures(after, server.tool, key):
        failing = f" (the tool itself failed: {tool_error[:120]})" if tool_error else ""
        return proven(f"wizard called the tool {server.tool} over stdio, and after the call an "
                      f"event naming it arrived with the key from {proof.key_variable}"
                      f"{failing}; {claim}")  # fmt: skip
    if any(_names(event, server.tool) for event, _ in after):
        return failed(f"the capture of {server.tool} did not carry the key from "
                      f"{proof.key_variable} (a key written into the code?)")  # fmt: skip
    if tool_error and (credential := own_credential(tool_error)) is not None:
        return not_run(f"the tool needs a credential of its own ({credential}), which the "
                       "probe does not have, and sent no capture: cannot tell")  # fmt: skip
    others = f" ({len(after)} other event(s) after it)" if after else ""
    return failed(f"calling the tool {server.tool} sent no capture naming it to the host in "
                  f"{proof.host_variable}{others}")  # fmt: skip
