"""The linear sequence: one conversation, then the truth about how it ended.

Install the program's skill (while the engine starts: `with_skill`), assemble the prompt,
call the harness once, then route its result (`endings.route_result`): an abort shows the
program's matched abort case (or the generic aborted screen with the reason) and ends as
`aborted`; every other error has its own screen and ends as `failed`; only a clean result
runs the post-run hook and shows the success outro.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from dataclasses import replace

from wizard.outcome import AgentResult, Outcome
from wizard.programs.types import ProgramConfig
from wizard.runner.harness.types import Harness, RunInputs
from wizard.runner.sequence.context import RunContext, host_tools, with_skill
from wizard.runner.sequence.outcomes import AGENT_FINISHED, route_result
from wizard.skills.install import SkillInstall, planned_install, skill_file


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

    def conversation(ready: asyncio.Future[bool]) -> Awaitable[AgentResult]:
        return harness.run(
            RunInputs(
                prompt=assemble_prompt(program, planned_install(program.skill)),
                model=ctx.binding.model,
                spinner_message=program.spinner_message,
                # Not "set up" yet: the runner checks the project first, and says so then.
                success_message=AGENT_FINISHED,
                error_message=program.failure_message,
                allowed_tools=program.allowed_tools,
                disallowed_tools=program.disallowed_tools,
                tools=host_tools(ctx),
                tools_ready=ready,
                **ctx.run_settings(),
            )
        )

    result = await with_skill(ctx, conversation)
    if isinstance(result, Outcome):  # the skill could not be installed
        return result
    return replace(route_result(ctx, result), usage=result.usage)
