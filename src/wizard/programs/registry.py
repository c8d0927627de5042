"""Every program by id; `wizard skill <name>` builds one on the fly."""

from __future__ import annotations

import difflib

from wizard.errors import UsageError
from wizard.programs.mcp_analytics import MCP_ANALYTICS
from wizard.programs.replay_vision import REPLAY_VISION
from wizard.programs.revenue_analytics import REVENUE_ANALYTICS
from wizard.programs.self_driving import SELF_DRIVING
from wizard.programs.transactional_email import TRANSACTIONAL_EMAIL
from wizard.programs.types import POSTHOG_DOCS_URL, ProgramConfig

PROGRAMS: dict[str, ProgramConfig] = {
    program.id: program
    for program in (
        REVENUE_ANALYTICS,
        MCP_ANALYTICS,
        SELF_DRIVING,
        REPLAY_VISION,
        TRANSACTIONAL_EMAIL,
    )
}


def did_you_mean(name: str, choices: list[str]) -> str:
    """' Did you mean X?' when a close choice exists, else the list of choices."""
    close = difflib.get_close_matches(name, choices, n=1, cutoff=0.5)
    if close:
        return f"Did you mean '{close[0]}'?"
    return "Choose one of: " + ", ".join(sorted(choices)) + "."


def get_program(program_id: str) -> ProgramConfig:
    """The program with this id; a `UsageError` naming the closest one otherwise."""
    try:
        return PROGRAMS[program_id]
    except KeyError:
        raise UsageError(
            f"Unknown program '{program_id}'.",
            did_you_mean(program_id, list(PROGRAMS)) + " Run `wizard programs` to list them.",
        ) from None


def skill_program(skill_id: str) -> ProgramConfig:
    """The program `wizard skill <name>` runs: the skill alone, with no abort cases."""
    return ProgramConfig(
        id="agent-skill",
        label=skill_id,
        description=f"Run the skill {skill_id}.",
        skill=skill_id,
        spinner_message=f"Running the {skill_id} skill...",
        success_message=f"{skill_id} complete",
        docs_url=POSTHOG_DOCS_URL,
        sets_up=False,
    )
