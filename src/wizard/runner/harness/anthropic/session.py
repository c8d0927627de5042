"""`ClaudeSession`: one Claude Code conversation through the Claude Agent SDK, an `AgentSession`.

The session speaks the same compact events as pi's host, so the one driver and the one
event reader serve both engines. It asks the SDK for partial messages and turns the raw
stream into `text_start` / `text_delta` / `text_end` per text block: a stop marker in the
middle of a long block is seen while the block streams, as on pi, and `abort()` is
`interrupt()`, the only call that stops the CLI's turn. Each complete assistant message is a
`message_end`; its tool calls are `tool_start`, their results `tool_end`.

What the CLI is given: the program's prompt and wizard's notes; none of Claude's built-in
tools, but wizard's host tools (its file tools, which check a path as they open it, and its
sandboxed `bash` among them) through an in-process MCP server, which the CLI runs one at a
time; the run's tool gate as a pre-tool hook and the permission callback; the gateway as
`ANTHROPIC_BASE_URL` pointing at wizard's proxy, whose per-run token reaches the CLI through
an `apiKeyHelper` in a private settings file, never through its environment; its own config
and temp folders; no session files, no nonessential traffic, no retries of its own (nor its
non-streaming fallback after a broken stream). wizard starts the CLI itself before the SDK
has loaded, on the SDK's own command line for these options, and the SDK then takes the
running process over as its transport (`cli`, `transport`).

The SDK's errors end here, as `EngineError`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shlex
import shutil
import tempfile
from collections.abc import Awaitable, Callable, Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from wizard.atomic import write_atomically
from wizard.engines.bundle import installed_bundle
from wizard.engines.claude import bundled_cli
from wizard.errors import EngineError
from wizard.runner.harness.anthropic.adapter import SERVER, GateHooks, fence_call, mcp_server
from wizard.runner.harness.anthropic.cli import CliConfig, start_cli
from wizard.runner.harness.gate import ToolGate
from wizard.runner.harness.types import EngineLaunch, PromptResult, SessionStats
from wizard.tools.base import Decision, HostTool, ToolResult
from wizard.tools.child_env import CHILD_ENV_ALLOW, CHILD_ENV_ALLOW_PREFIXES
from wizard.tools.shell import SHELL_TOOL, SandboxedShell, shell_tool

ClientFactory = Callable[[Any], Any]
Event = dict[str, Any]
_RESULT_PREVIEW = 2000


class ClaudeSession:
    """One Claude CLI process, through the SDK's client; tests hand in a client over a
    scripted transport (`client_factory`)."""

    def __init__(
        self,
        launch: EngineLaunch,
        load_sdk: Callable[[], Awaitable[ModuleType]],
        client_factory: ClientFactory | None = None,
        reaping: list[asyncio.Future[Any]] | None = None,
    ) -> None:
        self.launch = launch
        # Where the CLI wizard started and killed, and the shell's runtime once it has
        # stopped, are left to end (`close`, `SandboxWrapper.close`).
        self._reaping = reaping
        self._load_sdk = load_sdk
        self._client_factory = client_factory
        self._process: asyncio.subprocess.Process | None = None  # the CLI, started by wizard
        self._sdk: ModuleType | None = None
        self._client: Any = None
        self._workspace: Path | None = None
        self._subscribers: list[Callable[[Event], None]] = []
        self._stats = SessionStats()
        self._in_turn = False
        self._interrupting = False
        self._killed = asyncio.Event()  # the CLI wizard started, killed to stop a turn
        self._error: str | None = None
        self._text_blocks: set[int] = set()
        self._tool_names: dict[str, str] = {}
        # What lives as long as the session: the sandbox runtime behind wizard's `bash`.
        self._exits = contextlib.AsyncExitStack()
        # The shell's runtime, started once for the session (None without the OS sandbox).
        self._shell_started: SandboxedShell | None = None
        # Set as the model's first call of the shell begins to stream (`_sandbox_ahead`).
        self._bash_coming = asyncio.Event()

    # --- lifecycle ------------------------------------------------------------------------

    async def start(self) -> None:
        """Start the CLI behind wizard's proxy (before the SDK is loaded, so that the two
        overlap: `cli`); `EngineError` if it does not start."""
        self._workspace = Path(tempfile.mkdtemp(prefix="wizard-claude-"))
        config = self._config(self._workspace)
        cli = None if self._client_factory is not None else bundled_cli()
        if cli is not None:
            try:
                self._process = await start_cli(cli, config)
            except OSError as exc:
                raise EngineError(f"the Claude CLI did not start: {exc}") from exc
        loading = asyncio.ensure_future(self._load_sdk())  # while the CLI and the shell start
        try:
            shell = await self._shell(self._workspace)
        except BaseException:
            loading.cancel()
            raise
        sdk = self._sdk = await loading
        self._exits.enter_context(_sdk_logging_into(self.launch.log))
        options = self._options(sdk, config, shell)
        if self._process is not None:
            from wizard.runner.harness.anthropic.transport import StartedCLI  # imports the SDK

            transport = StartedCLI(self._process, self.launch.log,
                                   waits=self._reaping is None)  # fmt: skip
            self._client = sdk.ClaudeSDKClient(options, transport=transport)
        else:  # the scripted CLI of the unit tests, or an SDK that finds its CLI itself
            self._client = (self._client_factory or sdk.ClaudeSDKClient)(options)
        with self._sdk_errors():
            await self._client.connect()

    @property
    def pid(self) -> int | None:
        """The CLI's process id, while it runs (wizard's, or the SDK's transport's when the SDK
        started it)."""
        if self._process is not None:
            return self._process.pid
        process = getattr(getattr(self._client, "_transport", None), "_process", None)
        return getattr(process, "pid", None)

    async def close(self) -> None:
        """Interrupt a turn still open (a bare disconnect lets the CLI finish it and run its
        pending tools), disconnect, and remove the session's folder."""
        client, self._client = self._client, None
        if client is not None:
            if self._in_turn and not self._interrupting:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(client.interrupt(), 5)
            with contextlib.suppress(Exception):
                await client.disconnect()
        if self._process is not None and self._process.returncode is None:
            with contextlib.suppress(ProcessLookupError):  # killed by its transport, or by none
                self._process.kill()
            ending = asyncio.ensure_future(self._process.wait())
            if self._reaping is None:
                await ending
            else:
                self._reaping.append(ending)
        await self._exits.aclose()
        if self._workspace is not None:
            shutil.rmtree(self._workspace, ignore_errors=True)
            self._workspace = None

    # --- the conversation -----------------------------------------------------------------

    def subscribe(self, callback: Callable[[Event], None]) -> Callable[[], None]:
        """Call `callback` with every event; returns the unsubscribe function."""
        self._subscribers.append(callback)
        return lambda: self._subscribers.remove(callback)

    async def prompt(self, text: str) -> PromptResult:
        """Send a prompt; return when the CLI's turn has ended (its result message)."""
        self._in_turn, self._interrupting, self._error = True, False, None
        with self._sdk_errors():
            await self._client.query(text)
            replies = asyncio.ensure_future(self._replies())
            killed = asyncio.ensure_future(self._killed.wait())
            try:
                await asyncio.wait({replies, killed}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                killed.cancel()
                if not replies.done():  # the CLI killed (`abort`): nothing more is read of it
                    replies.cancel()
                    with contextlib.suppress(BaseException):
                        await replies
            if not replies.cancelled():
                replies.result()
        self._in_turn = False  # a turn cancelled or broken stays open, for close() to stop
        if self._interrupting:
            result = PromptResult("aborted", "Request was aborted.")
        elif self._error is not None:
            result = PromptResult("error", self._error)
        else:
            result = PromptResult("stop")
        self._emit({"type": "agent_end", "stopReason": result.stop_reason,
                    "errorMessage": result.error_message})  # fmt: skip
        return result

    async def _replies(self) -> None:
        async for message in self._client.receive_response():
            self._on_message(message)

    async def abort(self) -> None:
        """Stop the turn in flight; `prompt` then returns, or fails (which the driver takes as
        the abort it asked for). Only a run that halts aborts, and its session is closed next:
        the CLI wizard started is killed (it runs no tool of its own and keeps no session; the
        turn's usage is the proxy's to count), where asking it to `interrupt()` and waiting for
        its answer took 70–140 ms of the exit here; nor is its end waited for (`prompt` returns
        at once: the kernel takes tens of milliseconds to free a killed Node process, and only
        then closes its pipes). One the SDK started is interrupted."""
        if self._in_turn and not self._interrupting:
            self._interrupting = True
            if self._process is not None:
                with contextlib.suppress(ProcessLookupError):
                    self._process.kill()
                self._killed.set()
                return
            with self._sdk_errors():
                await self._client.interrupt()

    async def stats(self) -> SessionStats:
        """Token usage of the session so far (from each turn's result)."""
        return self._stats

    @contextlib.contextmanager
    def _sdk_errors(self) -> Any:
        assert self._sdk is not None
        try:
            yield
        except self._sdk.ClaudeSDKError as exc:
            raise EngineError(str(exc)) from exc

    # --- the SDK's messages as events -----------------------------------------------------

    def _emit(self, event: Event) -> None:
        for callback in list(self._subscribers):
            callback(event)

    def _on_message(self, message: Any) -> None:
        sdk = self._sdk
        assert sdk is not None
        if isinstance(message, sdk.StreamEvent):
            if message.parent_tool_use_id is None:
                self._on_stream(message.event)
        elif isinstance(message, sdk.AssistantMessage):
            self._on_assistant(sdk, message)
        elif isinstance(message, sdk.UserMessage):
            self._on_tool_results(sdk, message)
        elif isinstance(message, sdk.ResultMessage):
            self._add_usage(message.usage)
            if message.is_error and not self._interrupting and self._error is None:
                self._error = "; ".join(message.errors or []) or str(message.result or "error")

    def _on_stream(self, event: Event) -> None:
        """A raw Messages API stream event: text blocks become text events; the start of a
        `bash` call is noted (`_sandbox_ahead`)."""
        kind, index = event.get("type"), int(event.get("index") or 0)
        if kind == "content_block_start":
            block = event.get("content_block") or {}
            if block.get("type") == "tool_use":
                if fence_call(str(block.get("name") or ""), {})[0] == SHELL_TOOL:
                    self._bash_coming.set()
            elif block.get("type") == "text":
                self._text_blocks.add(index)
                self._emit({"type": "text_start", "index": index})
                if block.get("text"):
                    self._emit({"type": "text_delta", "index": index, "delta": block["text"]})
        elif kind == "content_block_delta" and index in self._text_blocks:
            delta = event.get("delta") or {}
            if delta.get("type") == "text_delta":
                self._emit({"type": "text_delta", "index": index, "delta": delta.get("text", "")})
        elif kind == "content_block_stop" and index in self._text_blocks:
            self._text_blocks.discard(index)
            self._emit({"type": "text_end", "index": index})

    def _on_assistant(self, sdk: ModuleType, message: Any) -> None:
        texts = [block.text for block in message.content if isinstance(block, sdk.TextBlock)]
        calls = [block for block in message.content if isinstance(block, sdk.ToolUseBlock)]
        if message.error is not None:
            self._error = self._error or "\n".join(texts).strip() or str(message.error)
        self._emit({"type": "message_end", "text": texts, "tools": [c.name for c in calls]})
        for call in calls:
            self._tool_names[call.id] = call.name
            self._emit({"type": "tool_start", "id": call.id, "name": call.name,
                        "args": dict(call.input)})  # fmt: skip

    def _on_tool_results(self, sdk: ModuleType, message: Any) -> None:
        content = message.content if isinstance(message.content, list) else []
        for block in content:
            if isinstance(block, sdk.ToolResultBlock):
                name = self._tool_names.pop(block.tool_use_id, "")
                result = block.content if isinstance(block.content, str) else str(block.content)
                self._emit({"type": "tool_end", "id": block.tool_use_id, "name": name,
                            "isError": bool(block.is_error),
                            "result": result[:_RESULT_PREVIEW]})  # fmt: skip

    def _add_usage(self, usage: dict[str, Any] | None) -> None:
        usage, s = usage or {}, self._stats
        self._stats = SessionStats(
            s.input_tokens + int(usage.get("input_tokens") or 0),
            s.output_tokens + int(usage.get("output_tokens") or 0),
            s.cache_read_tokens + int(usage.get("cache_read_input_tokens") or 0),
            s.cache_write_tokens + int(usage.get("cache_creation_input_tokens") or 0),
        )

    # --- what the CLI is given ------------------------------------------------------------

    def _config(self, workspace: Path) -> CliConfig:
        """The CLI's configuration, its files written into the session's folder: the token
        reaches it through an `apiKeyHelper` in a private settings file."""
        launch = self.launch
        config, temp = workspace / "config", workspace / "tmp"
        config.mkdir()
        temp.mkdir()
        token = workspace / "token"
        write_atomically(token, launch.token.encode(), 0o600)
        settings = config / "wizard-settings.json"
        helper = {"apiKeyHelper": f"cat {shlex.quote(str(token))}"}
        write_atomically(settings, json.dumps(helper).encode(), 0o600)
        return CliConfig(
            cwd=launch.project_dir,
            model=launch.model,
            system_prompt=launch.system_prompt.strip(),
            settings=settings,
            env=_cli_env(launch.proxy_url, config, temp),
        )

    def _options(self, sdk: ModuleType, config: CliConfig, shell: list[HostTool]) -> Any:
        gate = self.launch.gate.serving(*shell)
        started = self._shell_started
        if started is not None and started.wrapper is not None:
            gate = _ShellAheadGate(gate, started, self.launch.project_dir)
        hooks = GateHooks(sdk, gate)
        return sdk.ClaudeAgentOptions(
            **config.options_fields(),
            mcp_servers={SERVER: mcp_server(sdk, gate)},
            hooks=hooks.hooks(),
            can_use_tool=hooks.can_use_tool,
            stderr=self.launch.log,
        )

    async def _shell(self, workspace: Path) -> list[HostTool]:
        """wizard's `bash`, in the OS sandbox when the run has one (Claude's own is off), the
        runtime started once for the session."""
        launch = self.launch
        if not launch.shell:
            return []
        if launch.sandbox is None:
            return [shell_tool(launch.project_dir, None)]
        engine = installed_bundle()
        if engine is None:
            raise EngineError(
                "the sandbox runtime for wizard's bash is not installed: run `wizard engines "
                "install pi` (it needs Node.js), or run with --no-sandbox"
            )
        shell = SandboxedShell.build(launch.sandbox, engine, workspace)
        try:
            wrapping = shell.wrapping(launch.project_dir, self._reaping)
            started = await self._exits.enter_async_context(wrapping)
        except OSError as exc:
            said = f"the sandbox runtime for wizard's bash did not start: {exc}"
            raise EngineError(said) from exc
        self._shell_started = started
        ahead = asyncio.ensure_future(self._sandbox_ahead(started))
        self._exits.push_async_callback(_cancelled, ahead)  # before the runtime ends
        return [shell_tool(launch.project_dir, started)]

    async def _sandbox_ahead(self, shell: SandboxedShell) -> None:
        """Make the first command's sandbox while the model thinks (`EngineLaunch.thinking`:
        its first request has gone on a tenth of a second unanswered), or as its first `bash`
        call begins to stream (its arguments still coming, then the CLI's own handling of it:
        50-100 ms here) if that is sooner, once the run is ready for tools (the project's
        first snapshot taken: the sandbox stands placeholders in the project). The first
        command then finds it made where the model took longer than the making, and the
        second finds it kept; a run whose first reply comes at once and calls no `bash` (one
        that ends on it) makes none."""
        coming = asyncio.ensure_future(self._bash_coming.wait())
        thinking = asyncio.ensure_future(self.launch.thinking())
        try:
            await asyncio.wait({coming, thinking}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiting in (coming, thinking):
                waiting.cancel()
        gate = self.launch.gate
        if await gate.ready() and not gate.halted():  # none for a run that is ending
            shell.make_ahead(self.launch.project_dir)


class _ShellAheadGate(ToolGate):
    """The run's gate (`gate`), for a session whose `bash` is wizard's own `shell`, whose next
    command's sandbox is made ahead, as pi's host makes it: thrown away before a call of any
    other tool is judged (what that tool changes must be in the next one, and neither the
    fence nor the tool may find the sandbox's placeholders: `.husky` as an empty file "is not
    a folder"), and made again, while the model thinks, once such a call has run; the
    shell's own calls make theirs as they end. None is made for a run that is ending or not
    ready. The deciding is the gate's own."""

    def __init__(self, gate: ToolGate, shell: SandboxedShell, folder: Path) -> None:
        vars(self).update(vars(gate))  # the same gate: its tools, fence, calls and readiness
        self._shell, self._folder = shell, folder

    async def judge(
        self, name: str, arguments: Mapping[str, Any], call_id: str | None = None
    ) -> Decision:
        if await self.ready():
            assert self._shell.wrapper is not None
            await self._shell.wrapper.before_call(name)
        return await super().judge(name, arguments, call_id)

    async def call(self, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        result = await super().call(name, arguments)
        ran = name in self.tools and self.ready_now() and not self.halted()
        if ran and name != SHELL_TOOL:
            self._shell.make_ahead(self._folder, after_tool=True)
        return result


async def _cancelled(task: asyncio.Future[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


@contextlib.contextmanager
def _sdk_logging_into(log: Callable[[str], None]) -> Iterator[None]:
    """The SDK's own log records into the session's log (the debug log, never the terminal):
    it logs the CLI's end as a "Fatal error in message reader" when wizard has killed the CLI
    to stop a turn (`abort`), which printed under the aborted screen; a failure it logs also
    reaches the session as its exception."""

    class ToSessionLog(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            log(f"sdk: {self.format(record)}")

    handler, logger = ToSessionLog(), logging.getLogger("claude_agent_sdk")
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)


def _cli_env(proxy_url: str, config: Path, temp: Path) -> dict[str, str]:
    """The CLI's environment over the SDK's (which copies wizard's own): every variable
    outside the allowlist blanked, so no key of wizard's reaches the CLI."""

    def allowed(name: str) -> bool:
        return name in CHILD_ENV_ALLOW or name.startswith((*CHILD_ENV_ALLOW_PREFIXES, "CLAUDE"))

    blanked = {name: "" for name in os.environ if not allowed(name)}
    return {
        **blanked,
        "ANTHROPIC_BASE_URL": proxy_url,
        "CLAUDE_CONFIG_DIR": str(config),
        "CLAUDE_CODE_TMPDIR": str(temp),
        # Its own logs (MCP server logs) go with the run, not into the user's home folder.
        "XDG_CACHE_HOME": str(temp / "cache"),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "CLAUDE_CODE_MAX_RETRIES": "0",
        # A broken stream is not asked again without streaming: the proxy's retry policy is
        # the only one, and a request after a fault is one it never allows.
        "CLAUDE_CODE_DISABLE_NONSTREAMING_FALLBACK": "1",
    }
