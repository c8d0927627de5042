"""What every sequence starts from: the run's context, its skill install and its host tools."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict

from wizard.events import AnalyticsEvent, EventSink
from wizard.outcome import AgentErrorType, Outcome, OutcomeStatus, Outro
from wizard.programs.types import ProgramConfig
from wizard.runner.harness.gate import ToolActivity
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


@dataclass(frozen=True)
class Binding:
    """How one run runs, and where each choice came from (flag, env, program, default): the
    switchboard's answer, which a sequence carries."""

    sequence: str
    harness: str
    model: str
    sources: Mapping[str, str] = field(default_factory=dict)


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
        """An outcome of this run."""
        return Outcome(
            status=status,
            program=self.program.id,
            harness=self.binding.harness,
            sequence=self.binding.sequence,
            error_type=error_type,
            reason=reason,
            source=source,
            outro=outro,
            sandbox="on" if self.sandbox is not None else "off",
        )


def install_program_skill(ctx: RunContext) -> SkillInstall | Outcome:
    """Install the program's skill into the project; the failed outcome if it cannot be."""
    program = ctx.program
    install = install_skill(ctx.skills, program.skill, ctx.project_dir)
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
