"""What every sequence starts from: the run's context, its skill install and its host tools."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict, TypeVar

from wizard.events import AnalyticsEvent, EventSink
from wizard.outcome import AgentErrorType, Outcome, OutcomeStatus, Outro, Tally
from wizard.programs.types import Binding, ProgramConfig
from wizard.runner.harness.activity import ToolActivity
from wizard.runner.harness.types import GatewaySettings
from wizard.runner.harness.usage import PRICES, RunSpend
from wizard.signals import AbortSource
from wizard.skills.install import SkillInstall, install_skill
from wizard.skills.sources import SkillSource
from wizard.tools.base import HostTool
from wizard.tools.env import env_tools
from wizard.tools.fence import Fence
from wizard.tools.project import AskFunction, project_tools
from wizard.tools.sandbox import SandboxPolicy
from wizard.tools.skills import skill_tools

DEFAULT_MAX_PARALLEL = 3
T = TypeVar("T")


class RunSettings(TypedDict):
    """What every harness run of one program shares, whichever sequence asks for it (the rest
    of its `RunInputs` is the run's own: prompt, model, tools, messages)."""

    project_dir: Path
    gateway: GatewaySettings
    sink: EventSink
    engine_timeout: float
    prices: Mapping[str, tuple[float, ...]]
    spend: RunSpend | None
    sandbox: SandboxPolicy | None
    read_only: Mapping[str, Path]
    code_paths: tuple[str, ...]
    detect_skill_aborts: bool
    activity: ToolActivity | None
    engine_settled: Callable[[], None]


@dataclass(frozen=True)
class RunContext:
    """Everything a sequence needs for one run of one program."""

    program: ProgramConfig
    project_dir: Path
    binding: Binding
    gateway: GatewaySettings
    skills: SkillSource
    sink: EventSink
    ask: AskFunction | None = None
    engine_timeout: float = 150.0
    # Model prices for the usage's cost (`runner.harness.usage.price_table`).
    prices: Mapping[str, tuple[float, ...]] = field(default_factory=lambda: dict(PRICES))
    # What the run has spent against its budget (`--max-turns`, `--max-cost`, `--max-time`).
    spend: RunSpend | None = None
    run_id: str = "run"
    # The orchestrator's limit on task runs at once (`--max-parallel`).
    max_parallel: int = DEFAULT_MAX_PARALLEL
    # The OS sandbox of every command the agent runs; None with `--no-sandbox`.
    sandbox: SandboxPolicy | None = None
    # `wizard resume`: the interrupted orchestrator run whose queue this run carries on.
    resume_from: str | None = None
    # A preview's copy (`project_dir`) shows these folders of the project read-only: path in
    # the copy → the project's folder.
    read_only: Mapping[str, Path] = field(default_factory=dict)
    preview: bool = False
    # The tool calls of all the run's sessions (`ToolActivity`), which the journal watches.
    activity: ToolActivity | None = None
    # The journal's first snapshot, taken while the engine starts (`Run`): the skill's install,
    # the run's first change, waits for it. None: nothing to wait for.
    snapshot: asyncio.Future[Any] | None = field(default=None, repr=False)
    # Told each time a session's engine has started (`RunInputs.engine_settled`), and when the
    # conversation has ended (no engine of it starts any more: `with_skill`).
    engine_settled: Callable[[], None] = field(default=lambda: None, repr=False)
    # The run's outcome so far, which every ending of it is made from (`Run`).
    tally: Tally = field(default_factory=Tally, repr=False)

    def __post_init__(self) -> None:
        """What the run runs on is the first part of its outcome."""
        self.tally.add(harness=self.binding.harness, sequence=self.binding.sequence,
                       sandbox="on" if self.sandbox is not None else "off",
                       resumed_from=self.resume_from, run_id=self.run_id)  # fmt: skip

    def run_settings(self) -> RunSettings:
        """The `RunInputs` fields every harness run of this program shares."""
        return RunSettings(
            project_dir=self.project_dir,
            gateway=self.gateway,
            sink=self.sink,
            engine_timeout=self.engine_timeout,
            prices=self.prices,
            spend=self.spend,
            sandbox=self.sandbox,
            read_only=self.read_only,
            code_paths=self.program.written_files,
            detect_skill_aborts=bool(self.program.abort_cases),
            activity=self.activity,
            engine_settled=self.engine_settled,
        )

    def outcome(
        self,
        status: OutcomeStatus,
        outro: Outro,
        *,
        reason: str | None = None,
        error_type: AgentErrorType | None = None,
        source: AbortSource | None = None,
    ) -> Outcome:
        """An outcome of this run, with what its stages added (`tally`)."""
        return self.tally.outcome(
            status, self.program.id, error_type=error_type, reason=reason, source=source,
            outro=outro
        )  # fmt: skip


async def with_skill(
    ctx: RunContext, conversation: Callable[[asyncio.Future[bool]], Awaitable[T]]
) -> T | Outcome:
    """`conversation`'s result, run while the program's skill is installed: its engine starts
    and asks its first request meanwhile, and every tool call waits for the install (`ready`
    to pass on as `RunInputs.tools_ready`). An install that fails ends the conversation, and
    the run with the outcome of a failed install, before any tool ran; whichever ends first,
    the install is waited for, so nothing returns while it is half done."""
    ready: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
    installing = asyncio.ensure_future(install_program_skill(ctx))
    installing.add_done_callback(lambda done: ready.set_result(_installed(done)))
    talking = asyncio.ensure_future(conversation(ready))
    talking.add_done_callback(lambda _: ctx.engine_settled())
    try:
        if isinstance(install := await installing, Outcome):
            return install
        return await talking
    finally:
        if not talking.done():
            talking.cancel()  # its engine is torn down before this returns
        await asyncio.wait({talking})
        if not talking.cancelled():
            talking.exception()  # raised above, or of no account after a failed install


def _installed(install: asyncio.Future[SkillInstall | Outcome]) -> bool:
    return (
        not install.cancelled()
        and install.exception() is None
        and not isinstance(install.result(), Outcome)
    )


async def install_program_skill(ctx: RunContext) -> SkillInstall | Outcome:
    """Install the program's skill into the project once the journal's first snapshot is
    taken (in a thread: the engine goes on starting); the failed outcome if it cannot be. A
    cancellation waits for an install under way: a thread cannot be stopped halfway, and the
    run is recorded as it ends only once the skill is in place."""
    program = ctx.program
    if ctx.snapshot is not None:
        await asyncio.shield(ctx.snapshot)
    installing = asyncio.ensure_future(
        asyncio.to_thread(install_skill, ctx.skills, program.skill, ctx.project_dir)
    )
    try:
        install = await asyncio.shield(installing)
    except asyncio.CancelledError:
        await asyncio.wait({installing})
        raise
    if install.ok:
        return install
    ctx.sink(
        AnalyticsEvent("skill install failed", {"skill_id": program.skill, "kind": install.kind})
    )
    outro = Outro(
        "error", f"Skill install failed: {install.kind}", install.message(), program.docs_url
    )
    return ctx.outcome("failed", outro, reason=install.message())


def host_tools(ctx: RunContext) -> Callable[[Fence], list[HostTool]]:
    """The program's host tools, to be built over each run's fence."""

    def tools(fence: Fence) -> list[HostTool]:
        return [
            *env_tools(fence),
            *project_tools(ctx.project_dir, ctx.ask),
            *skill_tools(ctx.skills, ctx.project_dir),
        ]

    return tools
