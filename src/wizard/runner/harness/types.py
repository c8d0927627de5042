"""The harness contract: what a sequence hands a harness, and the engine-session boundary.

A harness adapts one agent engine. It takes `RunInputs`, runs the conversation through the
one driver (`runner.harness.driver`) over an `AgentSession` (the real pi process, the Claude
CLI through its SDK, or a scripted fake in unit tests), and returns an `AgentResult`. A
session gets an `EngineLaunch`. Nothing above a harness sees an engine type.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from wizard.ahead import Timeline
from wizard.events import EventSink
from wizard.outcome import AgentResult
from wizard.runner.harness.activity import ToolActivity
from wizard.runner.harness.gate import ToolGate
from wizard.runner.harness.usage import PRICES, RunSpend
from wizard.signals import DEFAULT_GATEWAY_MARKER
from wizard.tools.base import HostTool
from wizard.tools.fence import Fence
from wizard.tools.sandbox import SandboxPolicy

GatewayApi = Literal["anthropic-messages", "openai-completions"]


# The fix for a CA bundle the environment names that cannot be used (the plan's check, the
# proxy's TLS context).
CA_FIX = (
    "Point SSL_CERT_FILE at a PEM file of CA certificates (or SSL_CERT_DIR at a folder of "
    "them), or unset it to use certifi's."
)


@dataclass(frozen=True)
class GatewaySettings:
    """Where the model is: an Anthropic-Messages or OpenAI-Chat-compatible endpoint."""

    url: str
    api: GatewayApi = "anthropic-messages"
    key: str | None = field(default=None, repr=False)
    refusal_marker: str = DEFAULT_GATEWAY_MARKER
    # The proxy's retry policy: retries of a failed request (`WIZARD_MAX_RETRIES`).
    retries: int = 4
    # No byte from the gateway for this long ends the request (`WIZARD_STREAM_IDLE_TIMEOUT`).
    idle_timeout: float = 90.0


@dataclass(frozen=True)
class SessionStats:
    """Token usage of one engine session."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


@dataclass(frozen=True)
class PromptResult:
    """How one prompt's run ended: the stop reason of its last assistant message."""

    stop_reason: str
    error_message: str | None = None


async def _never() -> None:
    await asyncio.Event().wait()


@dataclass(frozen=True)
class EngineLaunch:
    """What a session gets to start its engine for one conversation.

    The model is behind wizard's gateway proxy: the session gets the proxy's URL and the
    run's token, never the gateway's key. Tool calls go through the run's gate.
    """

    project_dir: Path
    model: str
    api: GatewayApi
    proxy_url: str
    token: str = field(repr=False)
    gate: ToolGate = field(repr=False)
    system_prompt: str = ""
    # Whether the run offers a shell (`bash`): the engine's own, held in the OS sandbox, or
    # wizard's for an engine whose own cannot be held there.
    shell: bool = True
    sandbox: SandboxPolicy | None = None
    # How long the engine may take to answer a command of the session's own.
    engine_timeout: float = 150.0
    # Where the engine's own diagnostics go (shown with --debug).
    log: Callable[[str], None] = field(default=lambda line: None, repr=False)
    # Returns once the model is thinking: a request of the session's engine has gone on a
    # while without its reply ending (`GatewayProxy.thinking`), and the machine waits on it.
    # The first command's sandbox is made then (never, by default).
    thinking: Callable[[], Awaitable[None]] = field(default=_never, repr=False)


class AgentSession(Protocol):
    """The engine boundary a harness drives: one conversation with one agent engine.

    `prompt` emits the engine's events to subscribers in one compact shape, whatever the
    engine: `text_start`/`text_delta {delta}`/`text_end` with the block's `index`,
    `message_end {text: [...]}` per assistant message, `tool_start {id, name, args}` and
    `tool_end {id, name, isError, result}`, then `agent_end` (the protocol in
    `runner.harness.pi.session`). Foreign errors end at the session as `EngineError`.
    """

    async def start(self) -> None:
        """Start the engine."""

    @property
    def pid(self) -> int | None:
        """The engine's process id while it runs (None for an engine without one)."""
        ...

    def subscribe(self, callback: Callable[[dict[str, Any]], None]) -> Callable[[], None]:
        """Receive every engine event; returns the unsubscribe function."""
        ...

    async def prompt(self, text: str) -> PromptResult:
        """Send a prompt; return when its run has ended."""
        ...

    async def abort(self) -> None:
        """End the current run now."""

    async def stats(self) -> SessionStats:
        """Token usage so far."""
        ...

    async def close(self) -> None:
        """Stop the engine and everything it started."""


@dataclass(frozen=True)
class RunInputs:
    """What a sequence hands a harness for one linear run."""

    project_dir: Path
    prompt: str
    model: str
    gateway: GatewaySettings
    spinner_message: str = "Customizing your project..."
    success_message: str = "Setup complete"
    error_message: str = "Setup failed"
    # When a program lists allowed host tools, only those (and the task tools) are offered.
    allowed_tools: tuple[str, ...] = ()
    disallowed_tools: tuple[str, ...] = ()
    sink: EventSink = lambda event: None
    # The engine silent this long while a turn is open is a failure (`WIZARD_ENGINE_TIMEOUT`).
    engine_timeout: float = 150.0
    # Model prices for the usage's cost (`runner.harness.usage.price_table`).
    prices: Mapping[str, tuple[float, ...]] = field(default_factory=lambda: dict(PRICES))
    # What the whole run has spent, against its budget; shared by its sessions.
    spend: RunSpend | None = field(default=None, repr=False)
    # The program's host tools, built over the run's fence (which resolves their paths).
    tools: Callable[[Fence], Sequence[HostTool]] = lambda fence: ()
    # Whether the agent keeps a todo list (TaskCreate…) that must be finished to succeed.
    todo_list: bool = True
    # Added to the run's `agent completed` / `agent aborted` analytics events.
    analytics: Mapping[str, Any] = field(default_factory=dict)
    # The OS sandbox every command the agent runs is held in; None: the fence alone.
    sandbox: SandboxPolicy | None = None
    # A preview's copy shows these folders of the project read-only (`ProjectRoot`).
    read_only: Mapping[str, Path] = field(default_factory=dict)
    # Paths that run code as the user (`code_names`) the program's skill must write.
    code_paths: tuple[str, ...] = ()
    # Whether a skill's `[ABORT]` ends the run. pi always looks; the anthropic harness looks
    # only when the program declares abort cases, as the TypeScript wizard's does (in linear,
    # seed and task runs; the gateway's refusal it always looks for).
    detect_skill_aborts: bool = True
    # The run's tool calls, across its sessions (`ToolActivity`); None: this session's own.
    activity: ToolActivity | None = field(default=None, repr=False)
    # What every tool call waits for (`ToolGate`): the journal's first snapshot and the
    # skill's install, made while the engine starts and asks its first request
    # (`sequence.context.with_skill`); True once made, False when they failed (then no tool
    # runs). None: nothing to wait for.
    tools_ready: asyncio.Future[bool] | None = field(default=None, repr=False)
    # Told each time a session's engine has started, before its first prompt (the journal's
    # first snapshot of a project new to it waits for it: `Run._journal`).
    engine_settled: Callable[[], None] = field(default=lambda: None, repr=False)


@dataclass(frozen=True)
class TaskRunInputs(RunInputs):
    """What the orchestrator hands a harness for one seed or task run.

    `settled` says whether the run has done what it is for (the seed has planned, the task
    has reported); the harness nudges while it has not. `reported` says whether the task has
    reported: from then on nothing the agent writes is scanned for a stop marker (a seed
    never reports, so every marker of its work turns counts).
    """

    settled: Callable[[], bool] = lambda: False
    reported: Callable[[], bool] = lambda: False
    nudge: str = ""
    max_nudges: int = 3
    todo_list: bool = False


class Harness(Protocol):
    """An adapter over one agent engine."""

    name: str

    async def prepare(self, progress: Callable[[str], None], ahead: Timeline) -> None:
        """Make sure the engine is ready (install it if the harness can); `EngineError` if not.
        What the run took ahead (`ahead`: its engine started with the process, its gateway
        client) is the harness's to take."""

    async def close(self) -> None:
        """Release what `prepare` kept for the run (an engine started early), and wait for
        what its sessions left ending (`PiHarness`: hosts killed at their close); the run's
        end, which every run calls."""

    async def run(self, inputs: RunInputs) -> AgentResult:
        """Run one linear conversation and say how it ended."""
        ...

    async def run_task(self, inputs: TaskRunInputs) -> AgentResult:
        """Run one orchestrator seed or task conversation and say how it ended.

        There is no completion guard: whether the task reported is the queue's to say.
        """
        ...
