"""`AnthropicHarness`: runs on the Claude Agent SDK (the legacy fallback), ending as pi's do.

A run, as it reads below: start the SDK's client behind wizard's gateway proxy, send the
prompt, nudge while the work is open, ask for a remark, classify with the shared endings.
The abort semantics follow the TypeScript wizard's anthropic path (checklist §10.6), with one
rule on top: a declared stop never ends in success. A skill's `[ABORT] <reason>` is looked for
only when the program declares abort cases (the gate), in linear runs and in orchestrator
seed and task runs alike; the gateway's refusal marker is looked for in every run, as on pi.
Every assistant text block is read in order (the remark reply too); the first marker found
interrupts the CLI at once (`interrupt()` is the only call that stops it). A security
violation still wins.

What the CLI is given: the program's prompt and wizard's notes; none of Claude's built-in
tools, but wizard's host tools (its file tools, which check a path as they open it, and its
sandboxed `bash` among them) through an in-process MCP server, which the CLI runs one at a
time; the fence as a pre-tool hook and the permission callback; the gateway as
`ANTHROPIC_BASE_URL` pointing at wizard's proxy, whose per-run token reaches the CLI through
an `apiKeyHelper` in a private settings file, never through its environment; its own config
and temp folders; no session files, no nonessential traffic, no retries of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from wizard.atomic import write_atomically
from wizard.engines.bundle import installed_pi, verified_pi
from wizard.engines.claude import check_bundled_cli, load_sdk
from wizard.errors import EngineChanged, EngineError
from wizard.events import LogLine, SpinnerMessage, SpinnerStarted, ToolCalled
from wizard.outcome import AgentResult
from wizard.runner.harness import endings
from wizard.runner.harness.anthropic.adapter import (
    BUILTIN_TOOLS,
    FenceGate,
    mcp_server,
)
from wizard.runner.harness.prompts import runtime_notes
from wizard.runner.harness.proxy import GatewayProxy, RetryPolicy
from wizard.runner.harness.state import RunState
from wizard.runner.harness.types import RunInputs, SessionStats, TaskRunInputs
from wizard.signals import (
    REMARK_INSTRUCTION,
    Marker,
    StopMarker,
    first_stop_marker,
    skill_abort_reason,
)
from wizard.tools.base import HostTool
from wizard.tools.fence import CHILD_ENV_ALLOW, CHILD_ENV_ALLOW_PREFIXES
from wizard.tools.shell import shell_tool

ClientFactory = Callable[[Any], Any]


class _Turns:
    """What the turns of one conversation added up to: token usage, and an error if any."""

    def __init__(self) -> None:
        self.stats = SessionStats()

    def add(self, usage: dict[str, Any] | None) -> None:
        usage = usage or {}
        s = self.stats
        self.stats = SessionStats(
            s.input_tokens + int(usage.get("input_tokens") or 0),
            s.output_tokens + int(usage.get("output_tokens") or 0),
            s.cache_read_tokens + int(usage.get("cache_read_input_tokens") or 0),
            s.cache_write_tokens + int(usage.get("cache_creation_input_tokens") or 0),
        )


class AnthropicHarness:
    """The legacy harness: Claude Code through the Claude Agent SDK."""

    name = "anthropic"

    def __init__(self, client_factory: ClientFactory | None = None) -> None:
        # Tests hand in a client over a faked transport; runs use `ClaudeSDKClient`.
        self._client_factory = client_factory

    async def prepare(self, progress: Callable[[str], None]) -> None:
        """The SDK must import. The engine bundle, which holds the sandbox runtime for wizard's
        `bash`, is installed if missing; without Node.js only a run with --no-sandbox can go
        on (a sandboxed one then stops, naming the fix)."""
        load_sdk()
        await asyncio.to_thread(check_bundled_cli)
        try:
            await asyncio.to_thread(verified_pi, progress)
        except EngineChanged:
            raise  # a changed sandbox runtime would run commands outside the sandbox
        except EngineError as exc:
            progress(f"the sandbox runtime is not available: {exc.message}")

    async def run(self, inputs: RunInputs) -> AgentResult:
        """Run one linear conversation and say how it ended."""
        return await self._drive(RunState(inputs, self.name), inputs.detect_skill_aborts)

    async def run_task(self, inputs: TaskRunInputs) -> AgentResult:
        """Run one orchestrator seed or task conversation; `[ABORT]` is looked for as in a
        linear run, when the program declares abort cases (a declared stop never ends in
        success)."""
        return await self._drive(RunState(inputs, self.name), inputs.detect_skill_aborts)

    async def _drive(self, run: RunState, detect: bool) -> AgentResult:
        sdk = load_sdk()
        inputs = run.inputs
        if inputs.spinner_message:
            inputs.sink(SpinnerStarted(inputs.spinner_message))
        gateway = inputs.gateway
        proxy = GatewayProxy(
            gateway.url,
            gateway.key,
            policy=RetryPolicy(max_retries=gateway.retries),
            idle_timeout=gateway.idle_timeout,
            notify=lambda message: inputs.sink(SpinnerMessage(message)),
        )
        try:
            with tempfile.TemporaryDirectory(prefix="wizard-claude-") as workspace:
                async with proxy:
                    options = self._options(sdk, run, proxy, Path(workspace))
                    client = (self._client_factory or sdk.ClaudeSDKClient)(options)
                    async with client:
                        try:
                            return await self._converse(sdk, client, run, detect, proxy)
                        except asyncio.CancelledError:
                            # Ctrl-C: a bare disconnect lets the CLI finish its turn and run
                            # its pending tools; only interrupt() stops it.
                            with contextlib.suppress(Exception):
                                await asyncio.wait_for(asyncio.shield(client.interrupt()), 5)
                            raise
        except sdk.ClaudeSDKError as exc:  # the SDK's errors end here, as an engine failure
            return endings.interrupted(run) or endings.engine_failed(run, str(exc))

    async def _converse(
        self, sdk: ModuleType, client: Any, run: RunState, detect: bool, proxy: GatewayProxy
    ) -> AgentResult:
        turns = _Turns()
        error = await self._turn(sdk, client, run, run.inputs.prompt, detect, turns, proxy)
        nudge, most = run.nudge()
        nudges = 0
        while error is None and run.may_continue() and nudges < most:
            nudges += 1
            run.inputs.sink(LogLine(f"work still open, nudge {nudges}/{most}"))
            error = await self._turn(sdk, client, run, nudge, detect, turns, proxy)
        if (ending := endings.interrupted(run)) is not None:
            return ending
        if error is not None:
            return endings.failed(run, error)
        if run.task is not None:  # the queue, not the harness, says whether the task reported
            return endings.completed(run, turns.stats)
        run.output.in_remark = True  # read for the remark only; its markers still count here
        await self._turn(sdk, client, run, REMARK_INSTRUCTION, detect, turns, proxy)
        if (ending := endings.interrupted(run)) is not None:
            return ending
        return endings.guard(run) or endings.succeeded(run, turns.stats)

    async def _turn(
        self,
        sdk: ModuleType,
        client: Any,
        run: RunState,
        text: str,
        detect: bool,
        turns: _Turns,
        proxy: GatewayProxy,
    ) -> str | None:
        """One prompt to its result; the error that ended it, if one did."""
        await client.query(text)
        error: str | None = None
        interrupted = False
        async for message in client.receive_response():
            if isinstance(message, sdk.AssistantMessage):
                self._assistant(sdk, run, message, detect)
                if message.error is not None:
                    error = _text_of(sdk, message) or str(message.error)
            elif isinstance(message, sdk.ResultMessage):
                turns.add(message.usage)
                if message.is_error and not run.halt.is_set() and error is None:
                    error = "; ".join(message.errors or []) or str(message.result or "error")
            if run.halt.is_set() and not interrupted:
                interrupted = True
                await client.interrupt()  # the only call that stops the CLI's turn
        if proxy.fault is not None and not run.halt.is_set():
            return proxy.fault
        return None if run.halt.is_set() else error

    @staticmethod
    def _assistant(sdk: ModuleType, run: RunState, message: Any, detect: bool) -> None:
        texts = [block.text for block in message.content if isinstance(block, sdk.TextBlock)]
        for block in message.content:
            if isinstance(block, sdk.ToolUseBlock):
                run.output.tool_called()
                run.inputs.sink(ToolCalled(block.name, dict(block.input)))
        for text in texts:  # in order; the first block with a marker counts
            if (marker := _stop_marker(run, text, detect)) is not None:
                run.latch.hold(marker)
                break
        run.output.assistant_text("\n".join(texts))

    def _options(self, sdk: ModuleType, run: RunState, proxy: GatewayProxy, workspace: Path) -> Any:
        inputs = run.inputs
        config, temp = workspace / "config", workspace / "tmp"
        config.mkdir()
        temp.mkdir()
        token = workspace / "token"
        write_atomically(token, proxy.token.encode(), 0o600)
        settings = config / "wizard-settings.json"
        helper = {"apiKeyHelper": f"cat {shlex.quote(str(token))}"}
        write_atomically(settings, json.dumps(helper).encode(), 0o600)
        tools = [*run.tools(), *self._shell(run, workspace)]
        gate = FenceGate(sdk, _decided(run), run.halt.is_set)
        return sdk.ClaudeAgentOptions(
            cwd=str(inputs.project_dir),
            model=inputs.model,
            tools=list(BUILTIN_TOOLS),
            system_prompt=runtime_notes(task_list=inputs.task_list).strip(),
            mcp_servers={"wizard": mcp_server(sdk, tools)},
            hooks=gate.hooks(),
            can_use_tool=gate.can_use_tool,
            permission_mode="default",
            setting_sources=[],
            settings=str(settings),
            env=_cli_env(proxy.url, config, temp),
            extra_args={"no-session-persistence": None},
            stderr=lambda line: inputs.sink(LogLine(f"[claude] {line}", "debug")),
        )

    @staticmethod
    def _shell(run: RunState, workspace: Path) -> list[HostTool]:
        """wizard's `bash`, in the OS sandbox when the run has one (Claude's own is off)."""
        if "bash" in run.fence.disallowed_tools:
            return []
        policy = run.inputs.sandbox
        if policy is None:
            return [shell_tool(run.inputs.project_dir, None)]
        engine = installed_pi()
        if engine is None:
            raise load_sdk().CLIConnectionError(
                "the sandbox runtime for wizard's bash is not installed: run `wizard engines "
                "install pi` (it needs Node.js), or run with --no-sandbox"
            )
        policy = policy.reading(engine.prefix).with_settings_file(workspace)
        cli = engine.sandbox_entry.with_name("cli.js")
        return [shell_tool(run.inputs.project_dir, (policy, engine.node, cli))]


def _stop_marker(run: RunState, text: str, detect: bool) -> StopMarker | None:
    """The block's stop marker: the gateway's refusal always; a skill's `[ABORT]` only when
    the program declares abort cases (`detect`); the earlier of the two in the block."""
    refusal = first_stop_marker(text, run.latch.gateway_marker, skill_markers=False)
    reason = skill_abort_reason(text) if detect else None
    if reason is None:
        return refusal
    skill = StopMarker(reason=reason, source="skill", offset=text.upper().find(Marker.ABORT))
    return refusal if refusal is not None and refusal.offset < skill.offset else skill


def _decided(run: RunState) -> Callable[[str, Any], Any]:
    def check(name: str, arguments: Any) -> Any:
        decision = run.fence.check(name, arguments)
        run.on_decision(name, decision)
        return decision

    return check


def _text_of(sdk: ModuleType, message: Any) -> str:
    return "\n".join(b.text for b in message.content if isinstance(b, sdk.TextBlock)).strip()


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
    }
