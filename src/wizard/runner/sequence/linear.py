"""The linear sequence: one conversation, then the truth about how it ended.

Install the program's skill, assemble the prompt, call the harness once, then route its
result: an abort shows the program's matched abort case (or the generic aborted screen with
the reason) and ends as `aborted`; every other error has its own screen and ends as
`failed`; only a clean result runs the post-run hook and shows the success outro.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from wizard.events import AnalyticsEvent, EventSink, LogLine
from wizard.outcome import AgentErrorType, AgentResult, Outcome, OutcomeStatus, Outro
from wizard.programs.types import ProgramConfig
from wizard.runner.harness.types import GatewaySettings, Harness, RunInputs
from wizard.runner.sequence.outros import abort_outro, error_outro, success_outro
from wizard.runner.switchboard import Binding
from wizard.signals import AbortSource
from wizard.skills.install import SkillInstall, install_skill, skill_file
from wizard.skills.sources import SkillSource
from wizard.tools.base import HostTool
from wizard.tools.env import env_tools
from wizard.tools.fence import Fence
from wizard.tools.project import AskFunction, project_tools
from wizard.tools.skills import skill_tools


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
        )


def assemble_prompt(program: ProgramConfig, install: SkillInstall) -> str:
    """The first prompt of a linear run."""
    parts = [program.prompt_intro] if program.prompt_intro else []
    parts.append(
        f"A skill has been installed at {install.path}/. Read {skill_file(install)} and follow "
        "its instructions completely. Its stop conditions come first: check them before you "
        "change anything."
    )
    if program.report_file:
        parts.append(f"When you are done, write your report to {program.report_file}.")
    return "\n\n".join(parts)


async def run_linear(ctx: RunContext, harness: Harness) -> Outcome:
    """Run `ctx.program` as one conversation on `harness`."""
    program = ctx.program
    install = install_skill(ctx.skills, program.skill, ctx.project_dir)
    if not install.ok:
        ctx.sink(
            AnalyticsEvent(
                "skill install failed", {"skill_id": program.skill, "kind": install.kind}
            )
        )
        outro = Outro(
            "error", f"Skill install failed: {install.kind}", install.message(), program.docs_url
        )
        return ctx.outcome("failed", outro, reason=install.message())

    def tools(fence: Fence) -> list[HostTool]:
        return [
            *env_tools(fence),
            *project_tools(ctx.project_dir, ctx.ask),
            *skill_tools(ctx.skills, ctx.project_dir),
        ]

    result = await harness.run(
        RunInputs(
            project_dir=ctx.project_dir,
            prompt=assemble_prompt(program, install),
            model=ctx.binding.model,
            gateway=ctx.gateway,
            spinner_message=program.spinner_message,
            success_message=program.success_message,
            error_message=program.failure_message,
            allowed_tools=program.allowed_tools,
            disallowed_tools=program.disallowed_tools,
            sink=ctx.sink,
            tools=tools,
            engine_timeout=ctx.engine_timeout,
        )
    )
    return route_result(ctx, result)


def route_result(ctx: RunContext, result: AgentResult) -> Outcome:
    """Turn a harness result into the run's outcome, with its outro."""
    program = ctx.program
    if result.error is AgentErrorType.ABORT:
        return _aborted(ctx, result)
    if result.error is not None:
        if result.error in (AgentErrorType.API_ERROR, AgentErrorType.RATE_LIMIT):
            properties = {
                "integration": program.id,
                "error_type": result.error.value,
                "error_message": result.message,
            }
            ctx.sink(AnalyticsEvent("agent api error", properties))
        outro = error_outro(program, result)
        return ctx.outcome("failed", outro, reason=result.message, error_type=result.error)
    if program.post_run is not None:
        try:
            program.post_run(ctx.project_dir)
        except Exception as exc:  # the user must hear the setup is not finished
            ctx.sink(LogLine(f"post-run step failed: {exc}", "error"))
            message = f"{program.label}: the final step failed"
            outro = Outro("error", message, str(exc), program.docs_url)
            return ctx.outcome("failed", outro, reason=str(exc))
    return ctx.outcome("succeeded", success_outro(program, result, ctx.project_dir))


def _aborted(ctx: RunContext, result: AgentResult) -> Outcome:
    """The matched abort case's screen, or the generic one; `agent aborted` either way."""
    reason = (result.message or "").strip()
    outro, case = abort_outro(ctx.program, reason)
    properties: dict[str, object] = {
        "integration": ctx.program.id,
        "reason": reason,
        "matched": case.message if case else None,
    }
    if result.abort_source == "gateway_policy":
        properties["source"] = "gateway_policy"
    ctx.sink(AnalyticsEvent("agent aborted", properties))
    return ctx.outcome(
        "aborted", outro, reason=reason, error_type=result.error, source=result.abort_source
    )
