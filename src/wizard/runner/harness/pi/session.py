"""`PiSession`: an async client for one pi host process, the pi engine boundary.

wizard runs pi through its own host (`host.mjs`), which creates the agent session with pi's
SDK and speaks a compact JSON Lines protocol over stdin/stdout, split on LF only (model text
may hold U+2028 or CR). One process serves one conversation; pi's own auto-retry is off, so
one prompt ends in exactly one `agent_end`.

Commands (wizard → host), each with an `id` answered by `{"type": "response", "id",
"success", "data"?, "error"?}`: `prompt {message}` (answered once pi accepted it), `abort`
(answered once the run has ended), `stats`, `close`, `sandbox_ahead` (make the first
command's sandbox now, once the run is ready for tools, unless another tool came first).

Events (host → wizard), never carrying a partial message, so a reply of n characters costs
about 2n bytes (its deltas and its final message) plus a constant per event:

- `ready`: the session exists; the first line the host writes;
- `text_start`, `text_delta {delta}`, `text_end`, each with the block's `index`;
- `message_end {text: [...], tools: [names], stopReason, errorMessage}` per assistant message;
- `tool_start {id, name, args}` and `tool_end {id, name, isError, result}`, previews bounded;
- `agent_end {stopReason, errorMessage}`: the prompt's run is over.

The host awaits every write, so a slow reader slows pi instead of filling a buffer; a reader
that stops for `stall_seconds` makes the host exit with a one-line reason on stderr.

Teardown matters because pi runs bash children in their own session: `close()` aborts the
run (which kills a running tool's process tree), closes stdin, then terminates, and finally
kills any descendant that outlived pi.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from wizard.engines.bundle import NodeBundle, ensure_bundle
from wizard.errors import EngineError
from wizard.logs import logger
from wizard.processes import descendants, is_stopped
from wizard.runner.harness.pi.bridge import HostBridge
from wizard.runner.harness.pi.early import ENGINE_CHECKED, LINE_LIMIT, host_launch, remove_folders
from wizard.runner.harness.types import EngineLaunch, GatewayApi, PromptResult, SessionStats
from wizard.tools.limits import MAX_TIMEOUT_S, CommandLimits
from wizard.tools.shell import absent_placeholders, remove_placeholders

log = logger(__name__)

PiEvent = dict[str, Any]
EventCallback = Callable[[PiEvent], None]
PROVIDER = "wizard-gateway"
_STDERR_KEEP = 16_384


def models_json(api: GatewayApi, model: str, url: str, key: str) -> dict[str, Any]:
    """pi's provider config: the gateway at `url` (for a run, wizard's proxy and its token)."""
    base = url.rstrip("/")
    provider: dict[str, Any] = {
        "baseUrl": base if api == "anthropic-messages" else base + "/v1",
        "api": api,
        "apiKey": key,
        "models": [{"id": model, "contextWindow": 200_000, "maxTokens": 16_384}],
    }
    if api == "openai-completions":
        provider["compat"] = {"supportsDeveloperRole": False, "supportsReasoningEffort": False}
    return {"providers": {PROVIDER: provider}}


class EngineProcess(Protocol):
    """What a session uses of its host's process: `asyncio.subprocess.Process`, or a host
    started before the event loop (`early.PopenProcess`)."""

    pid: int
    stdin: asyncio.StreamWriter | None
    stdout: asyncio.StreamReader | None
    stderr: asyncio.StreamReader | None

    @property
    def returncode(self) -> int | None:
        """Its exit status once it has ended."""

    def kill(self) -> None:
        """SIGKILL."""

    def terminate(self) -> None:
        """SIGTERM."""

    async def wait(self) -> int:
        """Wait for it to end; its exit status."""


class HostProcess:
    """A pi host started on the checked engine, loading pi's SDK and waiting for its launch:
    its process and its private folders (pi's agent folder, its temp folder). Started by
    `start_host`, early (`PiHarness.prepare`, or with the process: `early`) or when a session
    starts; a `PiSession` adopts it, and `discard` (a session's close, or the harness's for
    one no session took) ends it if it still runs and removes its folders."""

    def __init__(self, engine: NodeBundle, process: EngineProcess, agent_dir: Path,
                 temp_dir: Path) -> None:  # fmt: skip
        self.engine, self.process = engine, process
        self.agent_dir, self.temp_dir = agent_dir, temp_dir

    async def discard(self, *, wait: bool = True) -> None:
        """Kill the host if it still runs, and remove its folders (even when the wait for
        the killed host is itself cancelled). `wait=False`: its end is someone else's to
        wait for (`PiSession`'s `reaping`)."""
        try:
            if self.process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    self.process.kill()
                if wait:
                    await self.process.wait()
        finally:
            remove_folders((self.agent_dir, self.temp_dir))


async def start_host(engine: NodeBundle) -> HostProcess:
    """Start a pi host on `engine` (which the caller has checked, as the host is told): it
    loads pi's SDK at once, and runs nothing until a launch comes on its stdin."""
    launch = host_launch(engine)
    try:
        process = await asyncio.create_subprocess_exec(
            *launch.command,
            cwd=launch.temp_dir,  # the launch names the project, and the host moves there
            env=launch.env,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            limit=LINE_LIMIT,
            # Its own session: a Ctrl-C at the terminal reaches only wizard, which then
            # tears pi down in order (abort, then stop) instead of orphaning its children.
            start_new_session=True,
        )
    except BaseException:  # a cancelled start: asyncio has killed the process, if it began
        remove_folders((launch.agent_dir, launch.temp_dir))
        raise
    assert process.stdin is not None
    process.stdin.write(ENGINE_CHECKED)
    return HostProcess(engine, process, launch.agent_dir, launch.temp_dir)


class PiSession:
    """One running pi host process: one conversation."""

    def __init__(
        self,
        launch: EngineLaunch,
        engine: Callable[[], NodeBundle] = ensure_bundle,
        *,
        host: HostProcess | None = None,
        startup_timeout: float = 60.0,
        stall_seconds: float = 300.0,
        reaping: list[asyncio.Future[int]] | None = None,
    ) -> None:
        self.launch = launch
        # Where `close` leaves the wait for a host it killed once the host said it had left
        # (Node's exit is then the kernel freeing its memory, a fiftieth of a second here,
        # which nothing of the run needs to wait for: `PiHarness.close` waits at the run's
        # end); None: `close` waits itself.
        self._reaping = reaping
        self._engine = engine
        # The session's host: one started before it (loading pi already), else its own; it
        # goes, with its folders, at close.
        self._host = host
        self.startup_timeout = startup_timeout
        # How long the host waits for wizard to read its events before it gives up.
        self.stall_seconds = stall_seconds
        self.bridge = HostBridge(launch.gate)
        self._process: EngineProcess | None = None
        self._ids = itertools.count(1)
        self._pending: dict[str, asyncio.Future[PiEvent]] = {}
        self._subscribers: list[EventCallback] = []
        self._run_done: asyncio.Future[PromptResult] | None = None
        self._ready: asyncio.Future[None] | None = None
        self._stderr = bytearray()
        self._tasks: list[asyncio.Task[None]] = []
        self._eof = asyncio.Event()
        # The host said it is leaving: its session, commands and sandbox helpers are done.
        self._left = asyncio.Event()
        # Whether the host told of a tool call: the sandbox is made and thrown away around
        # tool calls (`host.mjs`), and the first made ahead only once the bridge said the run
        # is ready for tools, so a host that told of none and was not told so has nothing
        # to leave.
        self._tools_told = False
        self._first_ahead: asyncio.Task[None] | None = None
        # Names where the sandbox may stand placeholders in (the next command's sandbox is made
        # while the model thinks) that were not there before: a host that could not clean up
        # after itself (killed) leaves them, and `close` removes them.
        self._absent: list[str] = []
        # What crossed the boundary from pi: the volume benchmarks and tests measure.
        self.bytes_read = 0
        self.lines_read = 0
        self._exits = contextlib.AsyncExitStack()

    # --- lifecycle ------------------------------------------------------------------------

    async def start(self) -> None:
        """Take the host started for it (or start one), send it the launch, and wait until
        its session is ready; `EngineError` otherwise."""
        if self._host is None:
            self._host = await start_host(await asyncio.to_thread(self._engine))
        host = self._host
        self._process = host.process
        await self._exits.enter_async_context(self.bridge)
        self._ready = asyncio.get_running_loop().create_future()
        self._tasks = [
            asyncio.create_task(self._read_stdout()),
            asyncio.create_task(self._read_stderr()),
        ]
        if self.launch.sandbox is not None and self.launch.shell:
            self._absent = absent_placeholders(self.launch.project_dir)
            self._first_ahead = asyncio.create_task(self._first_sandbox_ahead())
        try:
            assert self._process.stdin is not None
            self._process.stdin.write(json.dumps(self._launch_spec(host)).encode() + b"\n")
            await self._process.stdin.drain()
            await asyncio.wait_for(self._ready, self.startup_timeout)
        except (TimeoutError, EngineError, ConnectionError) as exc:
            await self.close()
            raise EngineError(
                f"pi did not start: {exc}\n{self.stderr_tail()}".strip(),
                "Run `wizard engines status`; reinstall with `wizard engines install pi`.",
            ) from exc

    def _launch_spec(self, host: HostProcess) -> dict[str, Any]:
        """The conversation's settings, for the host; the gateway (wizard's proxy, with the
        run's token) goes into pi's private folder, where pi reads it."""
        launch, engine, agent_dir = self.launch, host.engine, host.agent_dir
        models = models_json(launch.api, launch.model, launch.proxy_url, launch.token)
        (agent_dir / "models.json").write_text(json.dumps(models))
        shell = ("bash",) if launch.shell else ()  # pi's own, in the OS sandbox
        limits = launch.sandbox.limits if launch.sandbox is not None else CommandLimits()
        spec = {
            **self.bridge.spec(),
            "cwd": str(launch.project_dir),
            "agentDir": str(agent_dir),
            "provider": PROVIDER,
            "model": launch.model,
            "tools": [*shell, *launch.gate.tools],
            "systemPrompt": launch.system_prompt,
            "retries": 0,  # the proxy's retry policy is the only one
            "stallSeconds": self.stall_seconds,
            "commandTimeout": {"timeoutDefault": limits.timeout_s, "timeoutMax": MAX_TIMEOUT_S},
        }
        if launch.sandbox is not None:
            # This run's private folders are closed to its commands too; the runtime's own
            # helpers (its seccomp filter) are read from the engine, read-only, and so is the
            # host's temp folder: the runtime mounts its network bridge's sockets from there,
            # and in the closed system temp folder they would be hidden (no allowed host, not
            # even the package registries, could be reached).
            private = launch.sandbox.denying(agent_dir, self.bridge.socket_path.parent)
            private = private.reading(engine.prefix, host.temp_dir)
            spec["sandbox"] = private.host_spec()
        return spec

    async def _first_sandbox_ahead(self) -> None:
        """Have the host make the first command's sandbox while the model thinks
        (`EngineLaunch.thinking`), as the anthropic harness's shell does; it also makes it as
        the model's first `bash` call streams, if that is sooner."""
        await self.launch.thinking()
        with contextlib.suppress(EngineError):
            await self._command({"type": "sandbox_ahead"})

    async def close(self) -> None:
        """Abort any run, stop pi, and leave no process behind."""
        if self._first_ahead is not None:
            self._first_ahead.cancel()
            await asyncio.gather(self._first_ahead, return_exceptions=True)
        process = self._process
        if process is not None and process.returncode is None:
            stopped = is_stopped(self.pid)  # a stopped pi answers nothing and ignores SIGTERM
            if not stopped and self._run_done is not None and not self._run_done.done():
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(self.abort(), 5)
            told = self._tools_told or self.bridge.said_ready
            if not told and (self._run_done is None or self._run_done.done()):
                # Every event it wrote came before its run's end (or it never ran one), and
                # it was never told the run is ready for tools, so it made no sandbox and ran
                # no command: its processes are its own group's (its runtime's bridges),
                # ended below; a host still loading the runtime would only say it has left
                # once the load is done (0.05-0.2 s here).
                self._left.set()
            survivors = descendants(process.pid)
            if stopped:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
            await self._stop_process(process)
            for pid in survivors:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            # And what the host started after that list was taken (a sandbox runtime still
            # starting its bridges when the host left): its process group, which it leads.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
        remove_placeholders(self.launch.project_dir, self._absent)
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        if self._host is not None:  # its folders (and the host itself, if it never started)
            await self._host.discard(wait=self._reaping is None)
            self._host = None
        await self._exits.aclose()

    async def _stop_process(self, process: EngineProcess) -> None:
        """Close the host's stdin and wait for it to go (once it says it has left, the rest is
        Node's own teardown: it is killed instead of waited for); terminate, then kill, a host
        that does not."""
        if process.stdin is not None:
            with contextlib.suppress(Exception):
                process.stdin.close()
        for action in (None, process.terminate, process.kill):
            if action is not None:
                with contextlib.suppress(ProcessLookupError):
                    action()
            exited = asyncio.ensure_future(process.wait())
            left = asyncio.ensure_future(self._left.wait())
            await asyncio.wait({exited, left}, timeout=5, return_when=asyncio.FIRST_COMPLETED)
            left.cancel()
            if not exited.done() and self._left.is_set():
                with contextlib.suppress(ProcessLookupError):
                    process.kill()  # it runs nothing more; its memory is freed meanwhile
                if self._reaping is not None:
                    self._reaping.append(exited)
                    return
                await exited
            if exited.done():
                return
            exited.cancel()

    @property
    def pid(self) -> int | None:
        """pi's process id while it runs."""
        return self._process.pid if self._process is not None else None

    def stderr_tail(self) -> str:
        """The last part of what pi wrote to stderr."""
        return self._stderr.decode(errors="replace").strip()

    # --- the conversation -----------------------------------------------------------------

    def subscribe(self, callback: EventCallback) -> Callable[[], None]:
        """Call `callback` with every pi event; returns the unsubscribe function."""
        self._subscribers.append(callback)
        return lambda: self._subscribers.remove(callback)

    async def prompt(self, text: str) -> PromptResult:
        """Send a prompt and return when its run has ended (the final `agent_end`)."""
        loop = asyncio.get_running_loop()
        self._run_done = loop.create_future()
        response = await self._command({"type": "prompt", "message": text})
        if not response.get("success", False):
            raise EngineError(f"pi rejected the prompt: {response.get('error')}")
        return await self._run_done

    async def abort(self) -> None:
        """Abort the current run; returns once pi has ended it (at once if it has: its end
        was read, and pi's answer would only say so)."""
        if self._run_done is None or not self._run_done.done():
            await self._command({"type": "abort"})

    async def stats(self) -> SessionStats:
        """Token usage of the session so far."""
        data = (await self._command({"type": "stats"})).get("data") or {}
        tokens = data.get("tokens") or {}
        return SessionStats(
            input_tokens=int(tokens.get("input", 0)),
            output_tokens=int(tokens.get("output", 0)),
            cache_read_tokens=int(tokens.get("cacheRead", 0)),
            cache_write_tokens=int(tokens.get("cacheWrite", 0)),
        )

    # --- wire -----------------------------------------------------------------------------

    async def _command(self, command: dict[str, Any]) -> PiEvent:
        process = self._process
        if process is None or process.stdin is None or self._eof.is_set():
            raise EngineError(f"pi is not running.\n{self.stderr_tail()}".strip())
        command_id = f"w{next(self._ids)}"
        future: asyncio.Future[PiEvent] = asyncio.get_running_loop().create_future()
        self._pending[command_id] = future
        try:
            process.stdin.write(json.dumps({**command, "id": command_id}).encode() + b"\n")
            await process.stdin.drain()
        except (ConnectionError, RuntimeError) as exc:
            self._pending.pop(command_id, None)
            raise EngineError(f"pi's stdin is closed: {exc}\n{self.stderr_tail()}") from exc
        try:
            return await asyncio.wait_for(future, self.launch.engine_timeout)
        except TimeoutError:
            self._pending.pop(command_id, None)
            raise EngineError(
                f"pi did not answer the {command['type']} command within "
                f"{self.launch.engine_timeout:g} s."
            ) from None

    async def _read_stdout(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        stream = self._process.stdout
        try:
            with contextlib.suppress(asyncio.IncompleteReadError, asyncio.LimitOverrunError):
                while line := await stream.readuntil(b"\n"):
                    self.bytes_read += len(line)
                    self.lines_read += 1
                    if line.strip():
                        self._dispatch(line)
        finally:  # however reading ended, nobody waits on pi's answer for ever
            self._on_eof()

    def _dispatch(self, line: bytes) -> None:
        try:
            message = json.loads(line.rstrip(b"\r\n"))
        except json.JSONDecodeError:
            message = None
        if not isinstance(message, dict):
            log.warning("pi wrote a line that is not a JSON object: %r", line[:200])
            return
        kind = message.get("type")
        if kind == "response" and message.get("id") in self._pending:
            future = self._pending.pop(message["id"])
            if not future.done():
                future.set_result(message)
            return
        if kind == "left":
            self._left.set()
            return
        self._tools_told = self._tools_told or kind in ("tool_start", "tool_end")
        if kind == "ready" and self._ready is not None and not self._ready.done():
            self._ready.set_result(None)
            return
        for callback in list(self._subscribers):
            callback(message)
        if kind == "agent_end" and self._run_done and not self._run_done.done():
            result = PromptResult(
                str(message.get("stopReason") or "stop"), message.get("errorMessage")
            )
            self._run_done.set_result(result)

    def _on_eof(self) -> None:
        self._eof.set()
        error = EngineError(f"pi exited unexpectedly.\n{self.stderr_tail()}".strip())
        for future in [*self._pending.values(), self._run_done, self._ready]:
            if future is not None and not future.done():
                future.set_exception(error)
        self._pending.clear()

    async def _read_stderr(self) -> None:
        assert self._process is not None and self._process.stderr is not None
        while chunk := await self._process.stderr.read(4096):
            self._stderr += chunk
            del self._stderr[:-_STDERR_KEEP]
